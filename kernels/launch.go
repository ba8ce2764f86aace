// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package kernels

import (
	"errors"
	"fmt"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant/element"
)

// DType is the element type of a kernel's input tensor.
type DType int

// Input element types. 16-bit inputs are widened to float32 exactly.
const (
	F32 DType = iota
	BF16
	F16
)

func (d DType) suffix() string {
	switch d {
	case F32:
		return "f32"
	case BF16:
		return "bf16"
	case F16:
		return "f16"
	}
	return "invalid"
}

// Size is the width of one element in bytes.
func (d DType) Size() int {
	if d == F32 {
		return 4
	}
	return 2
}

func (d DType) String() string { return d.suffix() }

// Format is the FP8 element format of a kernel's output; the values are the
// kernels' own.
type Format int32

// FP8 formats.
const (
	E4M3 Format = 0
	E5M2 Format = 1
)

// MaxFinite is the format's largest finite magnitude, 448 (E4M3) or 57344
// (E5M2): the reference's element.Type.MaxFinite, so that the kernels
// saturate and scale to the very value the reference does.
func (f Format) MaxFinite() float32 {
	if f == E5M2 {
		return element.E5M2.MaxFinite()
	}
	return element.E4M3.MaxFinite()
}

// Per-tensor state: StateBytes of device memory that must be zeroed once
// when allocated. The kernels keep the amax reduction's scratch in the first
// two words and the persistent kernels' tile counter and end ticket in the
// two from StateNextOffset (kq_sched_claim; all four left zero), and the
// recipe state at the other offsets.
const (
	StateBytes          = 32
	StateAmaxOffset     = 8
	StateScaleOffset    = 12
	StateScaleInvOffset = 16
	StateNextOffset     = 20
)

// Block shapes. Quantize kernels are memory bound; 256 threads per block
// with a grid of a few waves over the SMs keeps every SM busy on large
// tensors without making the amax ticket counter a bottleneck.
const (
	threads    = 256
	wavesPerSM = 8
	// residentPerSM matches __launch_bounds__(256, 4) of the kernels that
	// keep several loads in flight per thread (amax, cast, cast+transpose,
	// MXFP8 rowwise): their grid-stride grids are the blocks that fit at
	// once, so that none waits for a second wave.
	residentPerSM = 4
	// unrolled is the elements a thread of those kernels loads per
	// iteration (KQ_UNROLL groups of 8).
	unrolled = 4 * 8
	// rowChunk is the 8-element groups a warp of the vectorised MXFP8
	// rowwise kernel takes at once (KQ_ROW_CHUNK).
	rowChunk = 4 * 32
	// castChunk is the elements of one chunk of kq_cast's 16-bit loop
	// (KQ_CAST_UNROLL16 groups of 8 for each of KQ_CAST_THREADS threads).
	castChunk = 8 * 8 * threads
)

var typedKernels = []string{"kq_amax_", "kq_cast_", "kq_cast_tr_", "kq_cast_trw_", "kq_mxfp8_row_", "kq_mxfp8_col_", "kq_mxfp8_row8_", "kq_mxfp8_col8_", "kq_mxfp8_colt_"}

// halfKernels exist for the 16-bit input types only (suffixes _bf16, _f16).
var halfKernels = []string{"kq_mxfp8_both_", "kq_mxfp8_colw_", "kq_mxfp8_rowb_"}

var plainKernels = []string{"kq_delayed_update", "kq_dequant_fp8", "kq_mxfp8_dequant", "kq_cvt_f32", "kq_cvt_check"}

// Set is the kernels of one device, each module (modules.go) loaded on the
// first use of one of its kernels, so that a process loads only the modules
// its recipes launch. Use it only on that device's thread (inside
// Device.Do); it keeps one argument buffer, so it is not for concurrent use.
type Set struct {
	// fns are the kernels of the loaded modules.
	fns  map[string]cuda.Function
	sms  int
	args cuda.Args
	// kernelModule names each kernel's module (moduleTable), loaded is
	// every module loaded so far.
	kernelModule map[string]string
	loaded       []LoadedModule
	// payload is the kernel-parameter payload's staging buffer (payload.go).
	payload [payloadParamBytes]byte
	// target is the PTX target of the device; sm its machine code target
	// (SMFor), whose cubins load instead of the PTX unless ptxOnly
	// (PTXTargetEnv).
	target  Target
	sm      string
	ptxOnly bool
	// nvfp42D is NVFP42DEnv's value (variants.go; checked by Load).
	nvfp42D string
	// perSM is, for each kernel in fns, how many of its blocks (of
	// `threads` threads) one SM holds at once: the driver's occupancy for
	// the registers and shared memory the code gives it (waveSlots).
	perSM map[string]int
	// tileGridCap, when positive, caps the grids of the persistent tiled
	// kernels (waveSlots, capSlots): the GPU tests' several tiles per block
	// on small tensors (SetTileGridCap).
	tileGridCap int
}

// Target is the PTX target of the set's device, which its cubins were
// assembled from.
func (s *Set) Target() Target { return s.target }

// Load prepares the kernels for the current device. Each module loads on
// the first use of one of its kernels, from the cubin of the device's SM
// (SMFor) when one is embedded, else from the PTX of its target (TargetFor,
// or PTXTargetEnv), which the driver JIT-compiles (over a minute for every
// module, where a cubin loads in milliseconds). The payload module, the
// smallest, loads here: a driver that cannot load the code (one older
// than the PTX's ISA) fails when the backend opens, not at its first step.
func Load(c *cuda.Ctx) (*Set, error) {
	info := c.Info()
	target, ptxOnly, err := deviceTarget(info.Major, info.Minor)
	if err != nil {
		return nil, fmt.Errorf("loading kernels on %s: %w", info.Name, err)
	}
	s := &Set{
		fns: map[string]cuda.Function{}, perSM: map[string]int{}, kernelModule: map[string]string{},
		sms: max(info.SMs, 1), target: target, sm: SMFor(info.Major, info.Minor), ptxOnly: ptxOnly,
	}
	if err := s.readVariants(); err != nil {
		return nil, err
	}
	for _, m := range moduleTable() {
		for _, n := range append(m.required(), m.optional...) {
			s.kernelModule[n] = m.name
		}
	}
	if err := s.loadModule(c, ModulePayload); err != nil {
		return nil, err
	}
	return s, nil
}

// waveSlots is how many blocks of kernel name run at once on the device,
// one wave: its blocks per SM (perSM) times the SMs, or the tests' cap
// when lower (SetTileGridCap). A grid-stride kernel given at most one wave
// has every block resident from start to end, where a grid a fraction
// over whole waves leaves its last blocks a part-empty wave of their own.
// The occupancy is read when the kernel's module loads, so waveSlots loads
// it first if need be; a module that fails to load is reported by the
// launch that follows. A kernel with no occupancy on record counts
// wavesPerSM blocks a SM.
func (s *Set) waveSlots(c *cuda.Ctx, name string) int64 {
	if _, ok := s.perSM[name]; !ok {
		_, _ = s.kernel(c, name)
	}
	perSM := s.perSM[name]
	if perSM <= 0 {
		perSM = wavesPerSM
	}
	return s.capSlots(int64(s.sms * perSM))
}

// Close unloads the modules.
func (s *Set) Close(c *cuda.Ctx) error {
	var errs []error
	for _, m := range s.loaded {
		errs = append(errs, c.UnloadModule(m.mod))
	}
	s.loaded, s.fns, s.perSM = nil, map[string]cuda.Function{}, map[string]int{}
	return errors.Join(errs...)
}

// grid is the number of blocks for a grid-stride loop over work items.
func (s *Set) grid(items int64, perThread int64) cuda.Dim3 {
	b := (items + threads*perThread - 1) / (threads * perThread)
	b = min(b, int64(s.sms*wavesPerSM))
	return cuda.Dim(int(max(b, 1)))
}

// residentGrid is grid for the kernels bounded to residentPerSM blocks per
// SM: at most the blocks that fit at once.
func (s *Set) residentGrid(items int64, perThread int64) cuda.Dim3 {
	b := (items + threads*perThread - 1) / (threads * perThread)
	b = min(b, int64(s.sms*residentPerSM))
	return cuda.Dim(int(max(b, 1)))
}

func (s *Set) launch(c *cuda.Ctx, name string, grid, block cuda.Dim3, st cuda.Stream) error {
	f, err := s.kernel(c, name)
	if err != nil {
		return err
	}
	return c.Launch(f, grid, block, 0, st, &s.args)
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// optional is the device address of b, or 0 (a null pointer) for the zero
// Buffer.
func optional(b cuda.Buffer) uint64 { return b.Ptr() }

// Amax computes the amax of the n elements of x and, from it, the current
// scaling scale (contract: "Per-tensor scale from an amax"), into state.
// The state's amax is the raw amax (as TE's amax tensor); eps only enters
// the scale. One launch.
func (s *Set) Amax(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, n int, state cuda.Buffer, f Format, eps float32, pow2 bool) error {
	s.args.Reset().Buffer(x).I64(int64(n)).Buffer(state).F32(f.MaxFinite()).F32(eps).I32(b2i(pow2))
	grid := s.residentGrid(int64(n), unrolled)
	if dt.Size() == 2 {
		// 16-bit inputs: chunks of castChunk elements (kq_amax_impl's
		// chunk loop), balanced over the resident blocks as in
		// CastUpdate.
		chunks := (int64(n) + castChunk - 1) / castChunk
		grid = cuda.Dim(int(balancedGrid(chunks, int64(s.sms*residentPerSM))))
	}
	return s.launch(c, "kq_amax_"+dt.suffix(), grid, cuda.Dim(threads), st)
}

// Cast converts the n elements of x times the state's scale to FP8 into out
// (same layout), writes 1/scale to scaleInv, and, when history is not the
// zero Buffer (delayed scaling), also reduces the amax into history[0] and
// the state. One launch.
func (s *Set) Cast(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, n int, state, out, scaleInv, history cuda.Buffer, f Format) error {
	return s.CastUpdate(c, st, dt, x, n, state, out, scaleInv, history, f, Update{})
}

// Update is the delayed-scaling update (contract: "Delayed scaling") that a
// cast with a history runs after it, in the same launch: over the amax
// history of HistoryLen entries (0: no update), with the recipe's margin and
// amax algorithm. The bytes are DelayedUpdate's after the cast.
type Update struct {
	HistoryLen int
	Margin     int
	MostRecent bool
}

// args appends the update's kernel parameters (length, fp8 max, margin,
// most_recent) for format f.
func (u Update) args(a *cuda.Args, f Format) {
	a.I32(int32(u.HistoryLen)).F32(f.MaxFinite()).I32(int32(u.Margin)).I32(b2i(u.MostRecent))
}

// CastUpdate is Cast with delayed scaling (history not the zero Buffer)
// ending in the update u, in one launch: the last block to finish runs the
// update on the history and the state's scale, as DelayedUpdate would
// after the cast.
func (s *Set) CastUpdate(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, n int, state, out, scaleInv, history cuda.Buffer, f Format, u Update) error {
	if err := checkUpdate(history, u); err != nil {
		return err
	}
	s.args.Reset().Buffer(x).I64(int64(n)).Buffer(state).Buffer(out).Ptr(optional(scaleInv)).Ptr(optional(history)).I32(int32(f))
	u.args(&s.args, f)
	var grid cuda.Dim3
	switch chunks := (int64(n) + castChunk - 1) / castChunk; {
	case dt.Size() != 2:
		grid = s.residentGrid(int64(n), unrolled)
	case history.Ptr() == 0:
		// Current scaling, 16-bit inputs: no amax to commit, so one
		// block per chunk of castChunk elements, as its cast+transpose
		// takes one per tile (on an H100, 1.7-2.8% faster than the
		// balanced grid at 8192^2 and 16384^2; docs/benchmarks.md).
		grid = cuda.Dim(int(max(chunks, 1)))
	default:
		// Delayed scaling, 16-bit inputs: the resident blocks striding
		// over the chunks, balanced so that every block takes as many
		// chunks (or one fewer): at 8192^2 4096 chunks on 528 slots
		// would leave a last round for 400 blocks while 128 sat idle;
		// 512 blocks take 8 each. The fused amax commits once a block.
		grid = cuda.Dim(int(balancedGrid(chunks, int64(s.sms*residentPerSM))))
	}
	return s.launch(c, "kq_cast_"+dt.suffix(), grid, cuda.Dim(threads), st)
}

// checkUpdate rejects an update without a history to run on.
func checkUpdate(history cuda.Buffer, u Update) error {
	if u.HistoryLen < 0 || (u.HistoryLen > 0 && history.Ptr() == 0) {
		return fmt.Errorf("kernels: delayed update of a %d-entry history without a history buffer", u.HistoryLen)
	}
	return nil
}

// CastTranspose is Cast for a [rows, cols] tensor that writes the
// transposed data [cols, rows] to outCol and, unless outRow is the zero
// Buffer, the rowwise data to outRow, in one pass. Shapes with rows % 16 ==
// 0 and cols % 8 == 0 and aligned buffers take the 128x128-tile kernel with
// 16-byte accesses; others the 32x32 one (same bytes).
func (s *Set) CastTranspose(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, state, outRow, outCol, scaleInv, history cuda.Buffer, f Format) error {
	return s.CastTransposeUpdate(c, st, dt, x, rows, cols, state, outRow, outCol, scaleInv, history, f, Update{})
}

// CastTransposeUpdate is CastTranspose with delayed scaling ending in the
// update u, in one launch (as CastUpdate).
func (s *Set) CastTransposeUpdate(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, state, outRow, outCol, scaleInv, history cuda.Buffer, f Format, u Update) error {
	if (rows+31)/32 > 65535 {
		return fmt.Errorf("kernels: CastTranspose of %d rows: too many", rows)
	}
	if err := checkUpdate(history, u); err != nil {
		return err
	}
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(state).Ptr(optional(outRow)).Buffer(outCol).
		Ptr(optional(scaleInv)).Ptr(optional(history)).I32(int32(f))
	u.args(&s.args, f)
	if wideTranspose(rows, cols, x, outRow, outCol) {
		// Delayed scaling (history set): the resident blocks stride over
		// the tiles, so that the fused amax commits once per block (one
		// same-address atomic per tile cost more than the cast at
		// 16384^2; H200, 64x64 tiles: 60% of copy bandwidth, 80%
		// striding). Current scaling has no amax to commit here, and
		// one block per tile is faster: on an H200 (docs/benchmarks.md)
		// the both-operand step went from 86.9% to 88.5% of copy at
		// 8192^2 and from 91.3% to 95.9% at 16384^2.
		name, tile := "kq_cast_trw_"+dt.suffix(), 128
		tiles := int64((cols+tile-1)/tile) * int64((rows+tile-1)/tile)
		grid := cuda.Dim(int(tiles))
		if history.Ptr() != 0 {
			grid = s.balancedWave(c, name, tiles)
		}
		return s.launch(c, name, grid, cuda.Dim(threads), st)
	}
	return s.launch(c, "kq_cast_tr_"+dt.suffix(), cuda.Dim2((cols+31)/32, (rows+31)/32), cuda.Dim2(32, 8), st)
}

// balancedGrid is the grid for items that blocks stride over, at most
// slots blocks: the fewest blocks with the least rounds, so that every
// block takes the same number of items (or one fewer). min(items, slots)
// leaves a last round of items%slots blocks: at 16384^2 (16384 tiles, 528
// slots) 16 blocks would run a 32nd tile while the other 512 sat idle.
func balancedGrid(items, slots int64) int64 {
	if items <= slots {
		return max(items, 1)
	}
	rounds := (items + slots - 1) / slots
	return (items + rounds - 1) / rounds
}

// tileGrid is the grid of persistent tiled kernel name over tx x ty
// tiles: the blocks that fit at once (waveSlots, the driver's occupancy
// for the registers and shared memory the JIT gave it), or one block a
// tile when the tiles are fewer. The occupancy, not a constant beside the
// launcher, sets the grid, so a change of the kernel's launch bound alone
// resizes it.
func (s *Set) tileGrid(c *cuda.Ctx, name string, tx, ty int) cuda.Dim3 {
	return cuda.Dim(int(max(1, min(int64(tx)*int64(ty), s.waveSlots(c, name)))))
}

// balancedWave is the grid of persistent kernel name whose blocks stride
// over items that carry a per-block commit (the fused amax): at most the
// blocks that fit at once (waveSlots), balanced so that every block takes
// as many items or one fewer (balancedGrid).
func (s *Set) balancedWave(c *cuda.Ctx, name string, items int64) cuda.Dim3 {
	return cuda.Dim(int(balancedGrid(items, s.waveSlots(c, name))))
}

// capSlots is slots, or the tests' grid cap when it is lower
// (SetTileGridCap).
func (s *Set) capSlots(slots int64) int64 {
	if s.tileGridCap > 0 {
		return min(slots, int64(s.tileGridCap))
	}
	return slots
}

// wideTranspose reports whether the 128x128-tile cast+transpose applies: its
// 16-byte loads need 8-element runs along a row (cols % 8, x aligned), its
// 8-byte rowwise stores an 8-byte aligned outRow, and its 16-byte stores of
// 16 transposed codes rows % 16 and an aligned outCol.
func wideTranspose(rows, cols int, x, outRow, outCol cuda.Buffer) bool {
	return rows%16 == 0 && cols%8 == 0 && x.Ptr()%16 == 0 && outRow.Ptr()%8 == 0 && outCol.Ptr()%16 == 0
}

// DelayedUpdate runs the delayed-scaling update after a step (contract:
// "Delayed scaling") over an amax history of length n. One launch.
func (s *Set) DelayedUpdate(c *cuda.Ctx, st cuda.Stream, history cuda.Buffer, n int, state cuda.Buffer, f Format, margin int, mostRecent bool) error {
	s.args.Reset().Buffer(history).I32(int32(n)).Buffer(state).F32(f.MaxFinite()).I32(int32(margin)).I32(b2i(mostRecent))
	return s.launch(c, "kq_delayed_update", cuda.Dim(1), cuda.Dim(1024), st)
}

// Dequantize writes decode(q[i]) * scaleInv to out as float32.
func (s *Set) Dequantize(c *cuda.Ctx, st cuda.Stream, q cuda.Buffer, n int, scaleInv, out cuda.Buffer, f Format) error {
	s.args.Reset().Buffer(q).I64(int64(n)).Buffer(scaleInv).Buffer(out).I32(int32(f))
	return s.launch(c, "kq_dequant_fp8", s.grid(int64(n), 4), cuda.Dim(threads), st)
}

// ConvertF32 converts n float32 values with the hardware's saturating
// round-to-nearest-even conversion, unscaled (for tests of the contract).
func (s *Set) ConvertF32(c *cuda.Ctx, st cuda.Stream, x cuda.Buffer, n int, out cuda.Buffer, f Format) error {
	s.args.Reset().Buffer(x).I64(int64(n)).Buffer(out).I32(int32(f))
	return s.launch(c, "kq_cvt_f32", s.grid(int64(n), 4), cuda.Dim(threads), st)
}

// CheckConversion compares, on the device, the hardware conversion with the
// kernels' integer model of the contract for the float32 bit patterns
// [start, start+count). res (72 bytes, zeroed by the caller) receives the
// mismatch count and up to 8 mismatches as hw<<40 | model<<32 | bits.
func (s *Set) CheckConversion(c *cuda.Ctx, st cuda.Stream, start, count uint64, res cuda.Buffer, f Format) error {
	s.args.Reset().U64(start).U64(count).Buffer(res).I32(int32(f))
	return s.launch(c, "kq_cvt_check", cuda.Dim(s.sms*wavesPerSM), cuda.Dim(threads), st)
}

// Grouped (MoE) per-tensor and MXFP8 quantize: one [rows, cols] input split
// along its rows by device split sizes (GroupOffsets), each group quantized
// as a tensor of its own, the groups' results concatenated as the
// reference's QuantizeGrouped returns them. Graph-safe: no launch shape
// depends on the split sizes.

// Row alignment of the groups (a misaligned group sets ws.Flag; read it
// with GroupError after the step).
const (
	GroupedCurrentAlign = 16
	GroupedMXFP8Align   = 32
)

// groupedQuantizeKernels are the grouped kernels of the quantize module.
func groupedQuantizeKernels() []string {
	var names []string
	for _, k := range []string{"kq_grp_amax_", "kq_grp_cast_", "kq_grp_cast_trw_", "kq_grp_cast_tr_", "kq_grp_mx_"} {
		for _, d := range []DType{F32, BF16, F16} {
			names = append(names, k+d.suffix())
		}
	}
	for _, k := range []string{"kq_grp_dcast_", "kq_grp_dcast_trw_", "kq_grp_dcast_tr_"} {
		for _, d := range []DType{F32, BF16, F16} {
			names = append(names, k+d.suffix())
		}
	}
	return append(names, "kq_grp_tiles", "kq_grp_mx2_bf16", "kq_grp_mx2_f16", "kq_grp_dupdate")
}

// CurrentOpts are the Float8CurrentScaling parameters of a grouped
// quantize: FP8 format, amax epsilon, power-of-2 scales.
type CurrentOpts struct {
	Format Format
	Eps    float32
	Pow2   bool
}

// warpGrid is the grid of a kernel whose warps stride over items, at most
// perSM blocks of 256 threads per SM (its __launch_bounds__).
func (s *Set) warpGrid(items int64, perSM int) cuda.Dim3 {
	b := (items + threads/32 - 1) / (threads / 32)
	b = min(b, int64(s.sms*perSM))
	return cuda.Dim(int(max(b, 1)))
}

// GroupedCurrent is the grouped Float8CurrentScaling quantize: group g gets
// its own amax (ws.Amax[g], float32, the raw amax as the reference's
// Result.Amax), scale (scale[g]) and decode factor (scaleInv[g] = 1/scale,
// the operands' ScaleInv[0]), empty groups scale 1. outRow (rows*cols
// bytes) receives the rowwise codes in the input's layout (group g's
// [n_g, cols] at cols*o_g, o_g its first row); outCol (rows*cols bytes)
// the transposed codes, group g's [cols, n_g] at cols*o_g. Either may be
// the zero Buffer (not both), as may scale and scaleInv (4*groups bytes
// each); ws needs Offsets (4*(groups+1)), Flag (4) and Amax (4*groups).
// Groups must be multiples of 16 rows. Three launches whatever the group
// count: offsets, amax, cast (rowwise) or cast+transpose (with outCol;
// 128x128 tiles when rows % 16 == 0, cols % 8 == 0 and the buffers are
// aligned, else 16x32 element-wise tiles).
func (s *Set) GroupedCurrent(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, splits cuda.Buffer, groups int,
	ws GroupWorkspace, outRow, outCol, scale, scaleInv cuda.Buffer, o CurrentOpts) error {
	if outRow.Ptr() == 0 && outCol.Ptr() == 0 {
		return fmt.Errorf("kernels: GroupedCurrent without an output operand")
	}
	n := rows * cols
	if err := needAll("GroupedCurrent", bufNeed{"input", x, n * dt.Size(), false}, bufNeed{"group amaxes", ws.Amax, 4 * groups, false},
		bufNeed{"rowwise data", outRow, n, true}, bufNeed{"columnwise data", outCol, n, true},
		bufNeed{"group scales", scale, 4 * groups, true}, bufNeed{"group scale_inv", scaleInv, 4 * groups, true}); err != nil {
		return err
	}
	if err := s.GroupOffsets(c, st, splits, groups, rows, GroupedCurrentAlign, ws, groups); err != nil {
		return err
	}
	vec := cols%8 == 0 && x.Ptr()%16 == 0
	items := int64(rows/16) * int64(ceilDiv(cols, 256))
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(ws.Offsets).I32(int32(groups)).Buffer(ws.Flag).
		Buffer(ws.Amax).I32(b2i(vec))
	if err := s.launch(c, "kq_grp_amax_"+dt.suffix(), s.warpGrid(items, residentPerSM), cuda.Dim(threads), st); err != nil {
		return err
	}
	if outCol.Ptr() == 0 {
		s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(ws.Offsets).I32(int32(groups)).Buffer(ws.Flag).
			Buffer(ws.Amax).Buffer(outRow).Ptr(optional(scale)).Ptr(optional(scaleInv)).I32(int32(o.Format)).
			F32(o.Format.MaxFinite()).F32(o.Eps).I32(b2i(o.Pow2)).I32(b2i(vec && outRow.Ptr()%8 == 0))
		return s.launch(c, "kq_grp_cast_"+dt.suffix(), s.warpGrid(items, residentPerSM), cuda.Dim(threads), st)
	}
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(ws.Offsets).I32(int32(groups)).Buffer(ws.Flag).
		Buffer(ws.Amax).Ptr(optional(outRow)).Buffer(outCol).Ptr(optional(scale)).Ptr(optional(scaleInv)).I32(int32(o.Format)).
		F32(o.Format.MaxFinite()).F32(o.Eps).I32(b2i(o.Pow2))
	if wideTranspose(rows, cols, x, outRow, outCol) {
		// One block per 128x128 tile, as CastTranspose.
		tiles := int64(ceilDiv(cols, 128)) * int64(ceilDiv(rows, 128))
		return s.launch(c, "kq_grp_cast_trw_"+dt.suffix(), cuda.Dim(int(max(tiles, 1))), cuda.Dim(threads), st)
	}
	tiles := int64(ceilDiv(cols, 32)) * int64(rows/16)
	return s.launch(c, "kq_grp_cast_tr_"+dt.suffix(), cuda.Dim(int(max(min(tiles, int64(s.sms*wavesPerSM)), 1))), cuda.Dim(threads), st)
}

// DelayedOpts are the DelayedScaling parameters of a grouped quantize: FP8
// format, amax history length (entries per group), margin, the amax
// algorithm (MostRecent: entry 0, else the history's maximum), and Update:
// end the step with each group's delayed update.
type DelayedOpts struct {
	Format     Format
	HistoryLen int
	Margin     int
	MostRecent bool
	Update     bool
}

// GroupedDelayed is the grouped DelayedScaling quantize of x [rows, cols]
// split along its rows by the device split sizes (int32, splits): group g
// casts with its own state's scale, scale[g] (float32, the scale the
// previous update computed), and records its amax. Per-group state,
// contiguous: scale (4*groups bytes) and history (4*groups*HistoryLen
// bytes, group g's amax history at g*HistoryLen floats). Outputs: ws.Amax[g]
// (float32, the group's max |x|, NaN ignored: the reference's Result.Amax),
// scaleInv[g] = 1/scale[g] (the operands' ScaleInv[0]; unless the zero
// Buffer), history[g][0] raised to the group's amax (quant.State.RecordAmax),
// and outRow (rows*cols bytes, group g's rowwise codes [n_g, cols] at
// cols*o_g, o_g its first row) and outCol (rows*cols bytes, group g's
// transposed codes [cols, n_g] at cols*o_g), either of which may be the
// zero Buffer (not both). With o.Update, each group's delayed update
// (contract: "Delayed scaling") follows: new scale[g] from the history,
// history rolled; scaleInv keeps this step's decode factors. ws needs
// Offsets (4*(groups+1)), Flag (4) and Amax (4*groups). Groups must be
// multiples of GroupedCurrentAlign (16) rows; a misaligned group, or sizes
// that do not add up to rows, sets ws.Flag and the step changes nothing
// (GroupError names the group). Three launches whatever the group count,
// none shaped by the split sizes (graph-safe): offsets (zeroing ws.Amax),
// one fused cast+amax pass (rowwise; with outCol, cast+transpose over
// 128x128 tiles when rows % 16 == 0, cols % 8 == 0 and the buffers are
// aligned, else 16x32 element-wise tiles), and the per-group history
// update, one block per group.
func (s *Set) GroupedDelayed(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, splits cuda.Buffer, groups int,
	ws GroupWorkspace, outRow, outCol, scale, scaleInv, history cuda.Buffer, o DelayedOpts) error {
	if outRow.Ptr() == 0 && outCol.Ptr() == 0 {
		return fmt.Errorf("kernels: GroupedDelayed without an output operand")
	}
	if o.HistoryLen < 1 {
		return fmt.Errorf("kernels: GroupedDelayed with an amax history of %d entries", o.HistoryLen)
	}
	n := rows * cols
	if err := needAll("GroupedDelayed", bufNeed{"input", x, n * dt.Size(), false}, bufNeed{"group amaxes", ws.Amax, 4 * groups, false},
		bufNeed{"rowwise data", outRow, n, true}, bufNeed{"columnwise data", outCol, n, true},
		bufNeed{"group scales", scale, 4 * groups, false}, bufNeed{"group scale_inv", scaleInv, 4 * groups, true},
		bufNeed{"amax histories", history, 4 * groups * o.HistoryLen, false}); err != nil {
		return err
	}
	if err := s.GroupOffsets(c, st, splits, groups, rows, GroupedCurrentAlign, ws, groups); err != nil {
		return err
	}
	if outCol.Ptr() == 0 {
		vec := cols%8 == 0 && x.Ptr()%16 == 0 && outRow.Ptr()%8 == 0
		items := int64(rows/16) * int64(ceilDiv(cols, 256))
		s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(ws.Offsets).I32(int32(groups)).Buffer(ws.Flag).
			Buffer(ws.Amax).Buffer(outRow).Buffer(scale).Ptr(optional(scaleInv)).I32(int32(o.Format)).I32(b2i(vec))
		// At most the resident blocks (__launch_bounds__(256, 3)).
		if err := s.launch(c, "kq_grp_dcast_"+dt.suffix(), s.warpGrid(items, 3), cuda.Dim(threads), st); err != nil {
			return err
		}
	} else {
		s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(ws.Offsets).I32(int32(groups)).Buffer(ws.Flag).
			Buffer(ws.Amax).Ptr(optional(outRow)).Buffer(outCol).Buffer(scale).Ptr(optional(scaleInv)).I32(int32(o.Format))
		var err error
		if wideTranspose(rows, cols, x, outRow, outCol) {
			// The resident blocks (__launch_bounds__(256, 3)), each over a
			// contiguous range of the 128x128 tiles.
			tiles := int64(ceilDiv(cols, 128)) * int64(ceilDiv(rows, 128))
			err = s.launch(c, "kq_grp_dcast_trw_"+dt.suffix(), cuda.Dim(int(max(min(tiles, int64(s.sms*3)), 1))), cuda.Dim(threads), st)
		} else {
			tiles := int64(ceilDiv(cols, 32)) * int64(rows/16)
			err = s.launch(c, "kq_grp_dcast_tr_"+dt.suffix(), cuda.Dim(int(max(min(tiles, int64(s.sms*wavesPerSM)), 1))), cuda.Dim(threads), st)
		}
		if err != nil {
			return err
		}
	}
	block := 32
	if o.Update {
		block = min(1024, roundUp(o.HistoryLen, 32))
	}
	s.args.Reset().Buffer(ws.Flag).Buffer(ws.Amax).Buffer(scale).Buffer(history).I32(int32(o.HistoryLen)).
		F32(o.Format.MaxFinite()).I32(int32(o.Margin)).I32(b2i(o.MostRecent)).I32(b2i(o.Update))
	return s.launch(c, "kq_grp_dupdate", cuda.Dim(groups), cuda.Dim(block), st)
}
