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
	// noOpArg marks the loaded kernels that take the no-op flag
	// (moduleKernels.noOp); launch passes them noop, the flag of the
	// launches under way (WithNoOp), a null pointer outside.
	noOpArg map[string]bool
	noop    cuda.Buffer
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
		fns: map[string]cuda.Function{}, perSM: map[string]int{}, kernelModule: map[string]string{}, noOpArg: map[string]bool{},
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
	s.loaded, s.fns, s.perSM, s.noOpArg = nil, map[string]cuda.Function{}, map[string]int{}, map[string]bool{}
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
	if s.noOpArg[name] {
		s.args.Ptr(optional(s.noop))
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

// warpGrid is the grid of a kernel whose warps stride over items, at most
// perSM blocks of 256 threads per SM (its __launch_bounds__).
func (s *Set) warpGrid(items int64, perSM int) cuda.Dim3 {
	b := (items + threads/32 - 1) / (threads / 32)
	b = min(b, int64(s.sms*perSM))
	return cuda.Dim(int(max(b, 1)))
}
