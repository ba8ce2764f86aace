// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package kernels

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"time"

	"github.com/kquant/kquant/internal/cuda"
)

// Modules other than quantize, each generated from kernels/<name>.cu.
const (
	// ModuleBlock holds the Float8BlockScaling kernels.
	ModuleBlock = "block"
	// ModuleNVFP4 holds the NVFP4 kernels, the scale swizzle and the NVFP4
	// dequantize.
	ModuleNVFP4 = "nvfp4"
	// ModuleGrouped holds the grouped-quantize offsets kernel.
	ModuleGrouped = "grouped"
	// ModulePayload holds the kernel-parameter payload copy, one kernel per
	// payload size class.
	ModulePayload = "payload"
	// ModuleGEMM holds the block FP8 dequantize and the float32 GEMM.
	ModuleGEMM = "gemm"
	// ModuleMX2D holds the MXFP8 kernel for 32x32 two-dimensional weight
	// tiles (MXFP82D) and its grouped form (GroupedMXFP82D).
	ModuleMX2D = "mx2d"
)

// moduleKernels is one module's kernels: typed ones get the _f32, _bf16
// and _f16 suffixes, half ones _bf16 and _f16; optional ones are looked up
// when present (code from before they existed still loads, and their
// callers fall back or report the missing kernel).
type moduleKernels struct {
	name                         string
	typed, half, plain, optional []string
	// noOp are the kernels (names as in typed, half and plain) that take
	// a step's no-op flag as their last parameter (noop.go): every kernel
	// a quantize step launches.
	noOp []string
}

// required is every kernel the module must have.
func (m moduleKernels) required() []string {
	names := append([]string(nil), m.plain...)
	for _, k := range m.typed {
		for _, d := range []DType{F32, BF16, F16} {
			names = append(names, k+d.suffix())
		}
	}
	for _, k := range m.half {
		for _, d := range []DType{BF16, F16} {
			names = append(names, k+d.suffix())
		}
	}
	return names
}

// moduleTable lists every module and its kernels.
func moduleTable() []moduleKernels {
	return []moduleKernels{
		{name: ModuleQuantize, typed: typedKernels, half: halfKernels, plain: plainKernels, optional: groupedQuantizeKernels(),
			noOp: append(append([]string{"kq_delayed_update"}, typedKernels...), halfKernels...)},
		{name: ModuleBlock, typed: []string{"kq_blk_row_", "kq_blk_col_", "kq_blk_2d_", "kq_blk_2dg_"},
			noOp: []string{"kq_blk_row_", "kq_blk_col_", "kq_blk_2d_"}},
		{name: ModuleNVFP4, typed: []string{"kq_nvf4_amax_", "kq_nvf4_amax_rht_", "kq_nvf4_row_", "kq_nvf4_col_", "kq_nvf4_2d_", "kq_nvf4_2dg_"},
			plain: []string{"kq_swizzle", "kq_nvf4_dequant", "kq_nvf4_2dp_bf16", "kq_nvf4_2dp_f16", "kq_nvf4_zero"},
			noOp:  []string{"kq_nvf4_amax_", "kq_nvf4_amax_rht_", "kq_nvf4_row_", "kq_nvf4_col_", "kq_nvf4_2d_", "kq_nvf4_2dg_", "kq_nvf4_2dp_", "kq_swizzle", "kq_nvf4_zero"}},
		{name: ModuleGrouped, plain: []string{"kq_grp_offsets"}},
		{name: ModulePayload, plain: []string{"kq_payload_copy"}, optional: payloadClassKernels()},
		{name: ModuleGEMM, plain: []string{"kq_blk_dequant", "kq_sgemm_nt"}},
		{name: ModuleMX2D, typed: []string{"kq_mx2d_", "kq_grp_mx2d_"}, noOp: []string{"kq_mx2d_"}},
		{name: ModuleTiming, plain: []string{"kq_l2_sweep"}},
	}
}

// LoadedModule is a module a Set has loaded: its name, the code the
// driver was given (a cubin's SM, "sm_90", or a PTX target, "compute_90",
// which the driver JIT-compiled) and how long the driver took to load it.
type LoadedModule struct {
	Name, Code string
	Took       time.Duration
	mod        cuda.Module
}

// Loaded lists the modules loaded so far, in the order of their first use.
func (s *Set) Loaded() []LoadedModule { return append([]LoadedModule(nil), s.loaded...) }

// kernel returns kernel name, loading its module on first use.
func (s *Set) kernel(c *cuda.Ctx, name string) (cuda.Function, error) {
	if f, ok := s.fns[name]; ok {
		return f, nil
	}
	module, ok := s.kernelModule[name]
	if !ok || s.isLoaded(module) {
		return cuda.Function{}, fmt.Errorf("kernels: no kernel %q", name)
	}
	if err := s.loadModule(c, module); err != nil {
		return cuda.Function{}, err
	}
	if f, ok := s.fns[name]; ok {
		return f, nil
	}
	return cuda.Function{}, fmt.Errorf("kernels: no kernel %q in module %s", name, module)
}

func (s *Set) isLoaded(module string) bool {
	for _, m := range s.loaded {
		if m.Name == module {
			return true
		}
	}
	return false
}

// image is what the driver loads for module: the cubin of the device's SM
// when there is one and PTXTargetEnv forces no PTX, else the PTX of the
// set's target. code names it (LoadedModule.Code).
func (s *Set) image(module string) (img []byte, code string, err error) {
	if !s.ptxOnly {
		img, err := Cubin(module, s.sm)
		if err == nil {
			return img, s.sm, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, "", err
		}
	}
	img, err = PTX(module, s.target)
	return img, string(s.target), err
}

// loadModule loads module and looks up its kernels and their occupancy.
func (s *Set) loadModule(c *cuda.Ctx, module string) error {
	var spec moduleKernels
	for _, m := range moduleTable() {
		if m.name == module {
			spec = m
		}
	}
	if spec.name == "" {
		return fmt.Errorf("kernels: no module %q", module)
	}
	img, code, err := s.image(module)
	if err != nil {
		return err
	}
	start := time.Now()
	mod, err := c.LoadModule(img)
	if err != nil {
		return fmt.Errorf("loading kernels module %s (%s): %w", module, code, err)
	}
	took := time.Since(start)
	fns := map[string]cuda.Function{}
	for _, n := range spec.required() {
		f, err := c.Function(mod, n)
		if err != nil {
			_ = c.UnloadModule(mod)
			return fmt.Errorf("module %s (%s): %w", module, code, err)
		}
		fns[n] = f
	}
	for _, n := range spec.optional {
		if f, err := c.Function(mod, n); err == nil {
			fns[n] = f
		}
	}
	perSM := make(map[string]int, len(fns))
	for n, f := range fns {
		if perSM[n], err = c.ResidentBlocks(f, threads, 0); err != nil {
			_ = c.UnloadModule(mod)
			return fmt.Errorf("kernels: %w", err)
		}
	}
	maps.Copy(s.fns, fns)
	maps.Copy(s.perSM, perSM)
	for n := range fns {
		if spec.takesNoOp(n) {
			s.noOpArg[n] = true
		}
	}
	s.loaded = append(s.loaded, LoadedModule{Name: module, Code: code, Took: took, mod: mod})
	return nil
}

func roundUp(a, m int) int { return (a + m - 1) / m * m }

func ceilDiv(a, m int) int { return (a + m - 1) / m }

// aligned reports whether every buffer's address is a multiple of n.
func aligned(n uint64, bs ...cuda.Buffer) bool {
	for _, b := range bs {
		if b.Ptr()%n != 0 {
			return false
		}
	}
	return true
}

// need checks that b holds at least n bytes.
func need(what string, b cuda.Buffer, n int) error {
	if b.Size() < n {
		return fmt.Errorf("kernels: %s needs %d bytes, has %d", what, n, b.Size())
	}
	return nil
}

// bufNeed is one buffer a launcher checks: what it is, its minimum size
// in bytes, and whether it may be the zero Buffer (then it is skipped).
type bufNeed struct {
	what     string
	buf      cuda.Buffer
	n        int
	optional bool
}

// needAll runs need on each of bs, naming them after op.
func needAll(op string, bs ...bufNeed) error {
	for _, b := range bs {
		if b.optional && b.buf.Ptr() == 0 {
			continue
		}
		if err := need(op+" "+b.what, b.buf, b.n); err != nil {
			return err
		}
	}
	return nil
}
