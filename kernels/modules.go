package kernels

import (
	"fmt"

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

// extraModules lists each module's kernels: typed ones get the _f32, _bf16
// and _f16 suffixes; optional ones are looked up when present (a PTX from
// before they existed still loads, and their callers fall back).
func extraModules() []struct {
	name                   string
	typed, plain, optional []string
} {
	return []struct {
		name                   string
		typed, plain, optional []string
	}{
		{ModuleBlock, []string{"kq_blk_row_", "kq_blk_col_", "kq_blk_2d_", "kq_blk_2dg_"}, nil, nil},
		{ModuleNVFP4, []string{"kq_nvf4_amax_", "kq_nvf4_amax_rht_", "kq_nvf4_row_", "kq_nvf4_col_", "kq_nvf4_2d_", "kq_nvf4_2dg_"},
			[]string{"kq_swizzle", "kq_nvf4_dequant", "kq_nvf4_2dp_bf16", "kq_nvf4_2dp_f16"}, nil},
		{ModuleGrouped, nil, []string{"kq_grp_offsets"}, nil},
		{ModulePayload, nil, []string{"kq_payload_copy"}, payloadClassKernels()},
		{ModuleGEMM, nil, []string{"kq_blk_dequant", "kq_sgemm_nt"}, nil},
		{ModuleMX2D, []string{"kq_mx2d_", "kq_grp_mx2d_"}, nil, nil},
		{ModuleTiming, nil, []string{"kq_l2_sweep"}, nil},
	}
}

// loadExtra loads the modules of extraModules into s.
func (s *Set) loadExtra(c *cuda.Ctx) error {
	for _, m := range extraModules() {
		ptx, err := PTX(m.name, s.target)
		if err != nil {
			return err
		}
		mod, err := c.LoadModule(ptx)
		if err != nil {
			return fmt.Errorf("loading kernels module %s: %w", m.name, err)
		}
		s.extra = append(s.extra, mod)
		names := append([]string(nil), m.plain...)
		for _, k := range m.typed {
			for _, d := range []DType{F32, BF16, F16} {
				names = append(names, k+d.suffix())
			}
		}
		for _, n := range names {
			f, err := c.Function(mod, n)
			if err != nil {
				return fmt.Errorf("module %s: %w", m.name, err)
			}
			s.fns[n] = f
		}
		for _, n := range m.optional {
			if f, err := c.Function(mod, n); err == nil {
				s.fns[n] = f
			}
		}
	}
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
