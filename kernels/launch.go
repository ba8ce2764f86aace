package kernels

import (
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
// two words (and leave them zero) and the recipe state at these offsets.
const (
	StateBytes          = 32
	StateAmaxOffset     = 8
	StateScaleOffset    = 12
	StateScaleInvOffset = 16
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
)

var typedKernels = []string{"kq_amax_", "kq_cast_", "kq_cast_tr_", "kq_cast_trw_", "kq_mxfp8_row_", "kq_mxfp8_col_", "kq_mxfp8_row8_", "kq_mxfp8_col8_", "kq_mxfp8_colt_"}

// halfKernels exist for the 16-bit input types only (suffixes _bf16, _f16).
var halfKernels = []string{"kq_mxfp8_both_", "kq_mxfp8_colw_"}

// mxfp8TileKernel is the name prefix of the fused ("both_") or the
// columnwise ("colw_") MXFP8 register-tile kernel, and its blocks per SM
// (its __launch_bounds__), to which the launchers size their grids so
// that the fused amax commits once per resident block. (The variants
// without the prefetch, 3 blocks per SM, and the 64x64 cast+transpose
// were measured alongside these on an H200, docs/benchmarks.md, and
// dropped.)
func mxfp8TileKernel(which string) (string, int) {
	return "kq_mxfp8_" + which + "_", 2
}

var plainKernels = []string{"kq_delayed_update", "kq_dequant_fp8", "kq_mxfp8_dequant", "kq_cvt_f32", "kq_cvt_check"}

// Set is the quantize module loaded on one device, with its kernels looked
// up once. Use it only on that device's thread (inside Device.Do); it keeps
// one argument buffer, so it is not for concurrent use.
type Set struct {
	mod  cuda.Module
	fns  map[string]cuda.Function
	sms  int
	args cuda.Args
	// extra are the modules other than quantize (modules.go), their
	// kernels in fns too.
	extra []cuda.Module
	// payload is the kernel-parameter payload's staging buffer (payload.go).
	payload [payloadParamBytes]byte
}

// Load JIT-compiles the quantize module and the other kernel modules
// (modules.go) for the current device.
func Load(c *cuda.Ctx) (*Set, error) {
	ptx, err := PTX(ModuleQuantize)
	if err != nil {
		return nil, err
	}
	mod, err := c.LoadModule(ptx)
	if err != nil {
		return nil, fmt.Errorf("loading kernels module %s: %w", ModuleQuantize, err)
	}
	s := &Set{mod: mod, fns: map[string]cuda.Function{}, sms: max(c.Info().SMs, 1)}
	var names []string
	for _, k := range typedKernels {
		for _, d := range []DType{F32, BF16, F16} {
			names = append(names, k+d.suffix())
		}
	}
	for _, k := range halfKernels {
		for _, d := range []DType{BF16, F16} {
			names = append(names, k+d.suffix())
		}
	}
	names = append(names, plainKernels...)
	for _, n := range names {
		f, err := c.Function(mod, n)
		if err != nil {
			_ = c.UnloadModule(mod)
			return nil, err
		}
		s.fns[n] = f
	}
	// The grouped kernels are optional: a quantize PTX from before them
	// still loads, and their launchers report the missing kernel.
	for _, n := range groupedQuantizeKernels() {
		if f, err := c.Function(mod, n); err == nil {
			s.fns[n] = f
		}
	}
	if err := s.loadExtra(c); err != nil {
		_ = s.Close(c)
		return nil, err
	}
	return s, nil
}

// Close unloads the modules.
func (s *Set) Close(c *cuda.Ctx) error {
	err := c.UnloadModule(s.mod)
	for _, m := range s.extra {
		if e := c.UnloadModule(m); e != nil && err == nil {
			err = e
		}
	}
	return err
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
	f, ok := s.fns[name]
	if !ok {
		return fmt.Errorf("kernels: no kernel %q", name)
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
	return s.launch(c, "kq_amax_"+dt.suffix(), s.residentGrid(int64(n), unrolled), cuda.Dim(threads), st)
}

// Cast converts the n elements of x times the state's scale to FP8 into out
// (same layout), writes 1/scale to scaleInv, and, when history is not the
// zero Buffer (delayed scaling), also reduces the amax into history[0] and
// the state. One launch.
func (s *Set) Cast(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, n int, state, out, scaleInv, history cuda.Buffer, f Format) error {
	s.args.Reset().Buffer(x).I64(int64(n)).Buffer(state).Buffer(out).Ptr(optional(scaleInv)).Ptr(optional(history)).I32(int32(f))
	return s.launch(c, "kq_cast_"+dt.suffix(), s.residentGrid(int64(n), unrolled), cuda.Dim(threads), st)
}

// CastTranspose is Cast for a [rows, cols] tensor that writes the
// transposed data [cols, rows] to outCol and, unless outRow is the zero
// Buffer, the rowwise data to outRow, in one pass. Shapes with rows % 16 ==
// 0 and cols % 8 == 0 and aligned buffers take the 128x128-tile kernel with
// 16-byte accesses; others the 32x32 one (same bytes).
func (s *Set) CastTranspose(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, state, outRow, outCol, scaleInv, history cuda.Buffer, f Format) error {
	if (rows+31)/32 > 65535 {
		return fmt.Errorf("kernels: CastTranspose of %d rows: too many", rows)
	}
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(state).Ptr(optional(outRow)).Buffer(outCol).
		Ptr(optional(scaleInv)).Ptr(optional(history)).I32(int32(f))
	if wideTranspose(rows, cols, x, outRow, outCol) {
		// One block per tile; with the fused amax (delayed scaling), the
		// resident blocks striding over the tiles, so that the amax
		// commits once per block: one same-address atomic per tile cost
		// more than the cast at 16384^2 (H200, 64x64 tiles: 60% of copy
		// bandwidth, 80% striding).
		name, tile, perSM := "kq_cast_trw_", 128, 3 // __launch_bounds__(256, 3)
		tiles := int64((cols+tile-1)/tile) * int64((rows+tile-1)/tile)
		grid := cuda.Dim(int(tiles))
		if history.Ptr() != 0 {
			grid = cuda.Dim(int(min(tiles, int64(s.sms*perSM))))
		}
		return s.launch(c, name+dt.suffix(), grid, cuda.Dim(threads), st)
	}
	return s.launch(c, "kq_cast_tr_"+dt.suffix(), cuda.Dim2((cols+31)/32, (rows+31)/32), cuda.Dim2(32, 8), st)
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

// MXFP8ScaleShape is the padded shape of the E8M0 scale matrix for a
// [rows, cols] tensor (TE's): rowwise [roundup(rows,128),
// roundup(ceil(cols/32),4)], columnwise [roundup(ceil(rows/32),4),
// roundup(cols,128)].
func MXFP8ScaleShape(rows, cols int, colwise bool) (srows, scols int) {
	up := func(a, m int) int { return (a + m - 1) / m * m }
	if colwise {
		return up((rows+31)/32, 4), up(cols, 128)
	}
	return up(rows, 128), up((cols+31)/32, 4)
}

// MXFP8 quantizes a [rows, cols] tensor in 1x32 (rowwise) or 32x1
// (columnwise) blocks: data to out ([rows, cols] either way), E8M0 scales to
// scales (the padded MXFP8ScaleShape, padding written as zero). ocp selects
// the OCP scale rounding instead of TE's. Unless state is the zero Buffer
// (else a zeroed StateBytes state), the tensor's amax (NaN ignored) lands
// in the state's amax word, fused into the same pass. One launch.
func (s *Set) MXFP8(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, out, scales cuda.Buffer, colwise bool, f Format, ocp bool, state cuda.Buffer) error {
	return s.MXFP8Swizzled(c, st, dt, x, rows, cols, out, scales, cuda.Buffer{}, colwise, f, ocp, state)
}

// MXFP8Swizzled is MXFP8 that, unless swz is the zero Buffer, also writes
// every scale byte (padding included) at its GEMM-swizzled position in swz:
// the layout Swizzle writes from the scale matrix (the columnwise matrix
// swizzled as its transpose), so a step needs no Swizzle launch. Same
// kernel, one launch.
func (s *Set) MXFP8Swizzled(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, out, scales, swz cuda.Buffer, colwise bool, f Format, ocp bool, state cuda.Buffer) error {
	srows, scols := MXFP8ScaleShape(rows, cols, colwise)
	if scales.Size() < srows*scols {
		return fmt.Errorf("kernels: MXFP8 scales need %d bytes, have %d", srows*scols, scales.Size())
	}
	if swz.Ptr() != 0 {
		if err := need("MXFP8 swizzled scales", swz, srows*scols); err != nil {
			return err
		}
	}
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(out).Buffer(scales).
		I32(int32(srows)).I32(int32(scols)).I32(int32(f)).I32(b2i(ocp)).Ptr(optional(state)).Ptr(optional(swz))
	tasks := int64(srows) * int64(scols)
	// The vectorised kernels need whole 8-element groups per row and
	// aligned 16-byte loads and 8-byte stores.
	vec := cols%8 == 0 && x.Ptr()%16 == 0 && out.Ptr()%8 == 0 && scales.Ptr()%8 == 0
	switch {
	case colwise && vec && dt != F32:
		// The fused kernel's 32x64 register tiles, columnwise only: one
		// warp per tile, at most the resident blocks (as MXFP8Both).
		name, perSM := mxfp8TileKernel("colw")
		tiles := int64(srows) * int64(scols/64)
		blocks := min((tiles+threads/32-1)/(threads/32), int64(s.sms*perSM))
		return s.launch(c, name+dt.suffix(), cuda.Dim(int(max(blocks, 1))), cuda.Dim(threads), st)
	case colwise && vec:
		// 32x256 tiles through shared memory, blocks striding over them.
		tiles := int64(srows) * int64((scols+255)/256)
		return s.launch(c, "kq_mxfp8_colt_"+dt.suffix(), s.grid(tiles*threads, 1), cuda.Dim(threads), st)
	case colwise:
		return s.launch(c, "kq_mxfp8_col_"+dt.suffix(), s.grid(tasks, 1), cuda.Dim(threads), st)
	case vec:
		// One warp per chunk of 32 x KQ_UNROLL 8-element groups of a
		// padded row, at most the resident blocks.
		chunks := int64(srows) * int64((4*scols+rowChunk-1)/rowChunk)
		blocks := min((chunks+threads/32-1)/(threads/32), int64(s.sms*residentPerSM))
		return s.launch(c, "kq_mxfp8_row8_"+dt.suffix(), cuda.Dim(int(max(blocks, 1))), cuda.Dim(threads), st)
	}
	// One warp per 1x32 block.
	return s.launch(c, "kq_mxfp8_row_"+dt.suffix(), s.grid(tasks*32, 1), cuda.Dim(threads), st)
}

// MXFP8BothFits reports whether MXFP8Both handles a [rows, cols] tensor of
// dt in these buffers: 16-bit inputs (the fused kernel holds its tile in
// registers as pairs), whole 8-element runs along each row (cols % 8 == 0)
// with a 16-byte aligned input (16-byte loads) and outputs (8-byte stores;
// 16-byte alignment is kept so that the kernel may widen them), and even
// scale addresses (2-byte stores). Device allocations are 256-byte aligned, so in practice it is
// the type and cols % 8.
func MXFP8BothFits(dt DType, rows, cols int, x, outRow, scRow, outCol, scCol cuda.Buffer) bool {
	return (dt == BF16 || dt == F16) && rows > 0 && cols > 0 && cols%8 == 0 &&
		aligned(16, x, outRow, outCol) && aligned(2, scRow, scCol)
}

// MXFP8Both quantizes a [rows, cols] tensor into both MXFP8 operands in one
// pass over the input: rowwise (1x32) data and scales to outRow and scRow,
// columnwise (32x1) to outCol and scCol, shapes and bytes as two MXFP8 calls
// (padding included), and, unless state is the zero Buffer, the tensor's
// amax into the state as MXFP8 does. The input is read once instead of
// twice. Only for what MXFP8BothFits accepts; otherwise call MXFP8 twice.
// One launch.
func (s *Set) MXFP8Both(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, outRow, scRow, outCol, scCol cuda.Buffer, f Format, ocp bool, state cuda.Buffer) error {
	return s.MXFP8BothSwizzled(c, st, dt, x, rows, cols, outRow, scRow, cuda.Buffer{}, outCol, scCol, cuda.Buffer{}, f, ocp, state)
}

// MXFP8BothSwizzled is MXFP8Both that also writes each operand's scales in
// the GEMM swizzled layout (as MXFP8Swizzled) to swzRow and swzCol, each
// unless the zero Buffer: both operands and their GEMM scales in one
// launch instead of three.
func (s *Set) MXFP8BothSwizzled(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, outRow, scRow, swzRow, outCol, scCol, swzCol cuda.Buffer, f Format, ocp bool, state cuda.Buffer) error {
	if !MXFP8BothFits(dt, rows, cols, x, outRow, scRow, outCol, scCol) {
		return fmt.Errorf("kernels: MXFP8Both does not handle [%d, %d] %v with these buffers", rows, cols, dt)
	}
	rr, rc := MXFP8ScaleShape(rows, cols, false)
	cr, cc := MXFP8ScaleShape(rows, cols, true)
	// The kernel's 32x64 tiles span both padded scale matrices, which
	// cover the same roundup(rows,128) x roundup(cols,128) elements.
	if rr != 32*cr || 32*rc != cc || cc%64 != 0 {
		return fmt.Errorf("kernels: MXFP8Both: scale shapes [%d, %d] and [%d, %d] do not tile", rr, rc, cr, cc)
	}
	for _, b := range []struct {
		what string
		buf  cuda.Buffer
		n    int
	}{{"the input", x, rows * cols * dt.Size()}, {"rowwise data", outRow, rows * cols}, {"colwise data", outCol, rows * cols}, {"rowwise scales", scRow, rr * rc}, {"colwise scales", scCol, cr * cc}} {
		if err := need("MXFP8Both "+b.what, b.buf, b.n); err != nil {
			return err
		}
	}
	if swzRow.Ptr() != 0 {
		if err := need("MXFP8Both rowwise swizzled scales", swzRow, rr*rc); err != nil {
			return err
		}
	}
	if swzCol.Ptr() != 0 {
		if err := need("MXFP8Both colwise swizzled scales", swzCol, cr*cc); err != nil {
			return err
		}
	}
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(outRow).Buffer(scRow).I32(int32(rc)).
		Buffer(outCol).Buffer(scCol).I32(int32(cr)).I32(int32(cc)).I32(int32(f)).I32(b2i(ocp)).Ptr(optional(state)).
		Ptr(optional(swzRow)).Ptr(optional(swzCol))
	// One warp per 32x64 tile, warps striding over the tiles; at most the
	// blocks that fit at once, so that the fused amax commits once per
	// resident block. (The first layout of this kernel, 4 blocks per SM
	// at 64 registers, spilled about 250 bytes per thread and ran at
	// 44-47% of copy bandwidth on an H200.)
	name, perSM := mxfp8TileKernel("both")
	tiles := int64(cr) * int64(cc/64)
	blocks := min((tiles+threads/32-1)/(threads/32), int64(s.sms*perSM))
	return s.launch(c, name+dt.suffix(), cuda.Dim(int(max(blocks, 1))), cuda.Dim(threads), st)
}

// MXFP8Dequantize writes decode(q) * 2^(e-127) to out as float32.
func (s *Set) MXFP8Dequantize(c *cuda.Ctx, st cuda.Stream, q cuda.Buffer, rows, cols int, scales cuda.Buffer, colwise bool, out cuda.Buffer, f Format) error {
	_, scols := MXFP8ScaleShape(rows, cols, colwise)
	s.args.Reset().Buffer(q).I32(int32(rows)).I32(int32(cols)).Buffer(scales).I32(int32(scols)).I32(b2i(colwise)).Buffer(out).I32(int32(f))
	return s.launch(c, "kq_mxfp8_dequant", s.grid(int64(rows)*int64(cols), 4), cuda.Dim(threads), st)
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

// GroupedMXFP8Out is one MXFP8 operand of a grouped quantize: Data
// (rows*cols bytes, the input's layout for both operands), Scales (the
// groups' padded E8M0 matrices concatenated) and, unless the zero Buffer,
// Swizzled (the same matrices in the GEMM layout, concatenated).
type GroupedMXFP8Out struct {
	Data, Scales, Swizzled cuda.Buffer
}

// GroupedMXFP8ScaleRows bounds the rows of the concatenated padded rowwise
// scale matrices of a grouped MXFP8 quantize, sum of roundup(n_g, 128): a
// group of 32-row multiples pads at most 96 rows, and at most rows/32
// groups are nonempty. The columnwise matrices take a 32nd of it.
func GroupedMXFP8ScaleRows(rows, groups int) int {
	return rows + 96*min(groups, rows/32)
}

// GroupedMXFP8 is the grouped MXFP8BlockScaling quantize (1x32 rowwise,
// 32x1 columnwise; groups of 32-row multiples). The data of either operand
// is the ungrouped data (the input's [rows, cols] layout, group g at
// cols*o_g). Group g's rowwise scales, [roundup(n_g,128),
// roundup(ceil(cols/32),4)], start at row P_g of row.Scales, and its
// columnwise scales, [roundup(n_g/32,4), roundup(cols,128)], at row P_g/32
// of col.Scales, where P_g = sum over h < g of roundup(n_h, 128): the
// reference's per-group matrices (padding zero) concatenated, and so are
// the swizzled ones (written directly when Swizzled is given). Buffers:
// row.Scales and row.Swizzled GroupedMXFP8ScaleRows(rows, groups) *
// roundup(ceil(cols/32),4) bytes, col.Scales and col.Swizzled
// GroupedMXFP8ScaleRows/32 * roundup(cols,128); tiles 4*(groups+1) bytes
// of scratch (the per-group P_g/128). An operand whose Data is the zero
// Buffer is skipped (not both). ws needs Offsets and Flag; with Amax
// (4*groups bytes) it also receives each group's amax (the reference's
// Result.Amax). Three launches whatever the group count: offsets, the
// padded prefix sum, one pass over the input for both operands (16-bit
// inputs with cols % 8 == 0 and aligned buffers take the register-tile
// kernel kq_grp_mx2, others the general kq_grp_mx; same bytes).
func (s *Set) GroupedMXFP8(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, splits cuda.Buffer, groups int,
	ws GroupWorkspace, tiles cuda.Buffer, row, col GroupedMXFP8Out, f Format, ocp bool) error {
	doRow, doCol := row.Data.Ptr() != 0, col.Data.Ptr() != 0
	if !doRow && !doCol {
		return fmt.Errorf("kernels: GroupedMXFP8 without an output operand")
	}
	maxRows, scolsRow, scolsCol, err := s.groupedMXFP8Prologue(c, st, "GroupedMXFP8", dt, x, rows, cols, splits, groups, ws, tiles, row, col)
	if err != nil {
		return err
	}
	ops := int32(0)
	if doRow {
		ops |= 1
	}
	if doCol {
		ops |= 2
	}
	vec := cols%8 == 0 && x.Ptr()%16 == 0 && row.Data.Ptr()%8 == 0 && col.Data.Ptr()%8 == 0
	maxTiles := int64(maxRows/32) * int64(scolsCol/64)
	if vec && dt != F32 && aligned(2, row.Scales, col.Scales) {
		// 16-bit inputs: kq_mxfp8_both's register tiles (raw input
		// pairs, paired-max amaxes, the column reduce-scatter), one warp
		// per tile, at most the blocks that fit at once
		// (__launch_bounds__(256, 3)).
		s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(ws.Offsets).Buffer(tiles).I32(int32(groups)).Buffer(ws.Flag).
			Ptr(optional(row.Data)).Ptr(optional(row.Scales)).Ptr(optional(row.Swizzled)).I32(int32(scolsRow)).
			Ptr(optional(col.Data)).Ptr(optional(col.Scales)).Ptr(optional(col.Swizzled)).I32(int32(scolsCol)).
			I32(int32(f)).I32(b2i(ocp)).Ptr(optional(ws.Amax)).I32(ops)
		return s.launch(c, "kq_grp_mx2_"+dt.suffix(), s.warpGrid(maxTiles, 3), cuda.Dim(threads), st)
	}
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(ws.Offsets).Buffer(tiles).I32(int32(groups)).Buffer(ws.Flag).
		Ptr(optional(row.Data)).Ptr(optional(row.Scales)).Ptr(optional(row.Swizzled)).I32(int32(scolsRow)).
		Ptr(optional(col.Data)).Ptr(optional(col.Scales)).Ptr(optional(col.Swizzled)).I32(int32(scolsCol)).
		I32(int32(f)).I32(b2i(ocp)).Ptr(optional(ws.Amax)).I32(b2i(vec)).I32(ops)
	// One warp per 32x64 tile of the padded row space, at most the blocks
	// that fit at once (__launch_bounds__(256, 2)).
	return s.launch(c, "kq_grp_mx_"+dt.suffix(), s.warpGrid(maxTiles, 2), cuda.Dim(threads), st)
}

// groupedMXFP8Prologue is what the grouped MXFP8 launchers (1D and 32x32
// tiles, the same buffers and layout) do before their quantize kernel:
// check the buffers of the operands they write (Data set; the swizzled
// scales optional), then launch the offsets (zeroing ws.Amax when given)
// and the padded prefix sum into tiles. It returns the bound on the
// concatenated rowwise scale rows and the two scale matrices' columns.
func (s *Set) groupedMXFP8Prologue(c *cuda.Ctx, st cuda.Stream, op string, dt DType, x cuda.Buffer, rows, cols int, splits cuda.Buffer,
	groups int, ws GroupWorkspace, tiles cuda.Buffer, row, col GroupedMXFP8Out) (maxRows, scolsRow, scolsCol int, err error) {
	maxRows = GroupedMXFP8ScaleRows(rows, groups)
	scolsRow = roundUp(ceilDiv(cols, 32), 4)
	scolsCol = roundUp(cols, 128)
	checks := []bufNeed{{"input", x, rows * cols * dt.Size(), false}, {"tiles", tiles, 4 * (groups + 1), false}}
	if row.Data.Ptr() != 0 {
		checks = append(checks, bufNeed{"rowwise data", row.Data, rows * cols, false}, bufNeed{"rowwise scales", row.Scales, maxRows * scolsRow, false},
			bufNeed{"rowwise swizzled scales", row.Swizzled, maxRows * scolsRow, true})
	}
	if col.Data.Ptr() != 0 {
		checks = append(checks, bufNeed{"columnwise data", col.Data, rows * cols, false},
			bufNeed{"columnwise scales", col.Scales, maxRows / 32 * scolsCol, false},
			bufNeed{"columnwise swizzled scales", col.Swizzled, maxRows / 32 * scolsCol, true})
	}
	nzero := 0
	if ws.Amax.Ptr() != 0 {
		checks = append(checks, bufNeed{"group amaxes", ws.Amax, 4 * groups, false})
		nzero = groups
	}
	if err := needAll(op, checks...); err != nil {
		return 0, 0, 0, err
	}
	if err := s.GroupOffsets(c, st, splits, groups, rows, GroupedMXFP8Align, ws, nzero); err != nil {
		return 0, 0, 0, err
	}
	s.args.Reset().Buffer(ws.Offsets).I32(int32(groups)).Buffer(tiles)
	if err := s.launch(c, "kq_grp_tiles", cuda.Dim(1), cuda.Dim(1024), st); err != nil {
		return 0, 0, 0, err
	}
	return maxRows, scolsRow, scolsCol, nil
}
