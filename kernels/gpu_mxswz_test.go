// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package kernels_test

import (
	"fmt"
	"testing"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant/swizzle"
	"github.com/kquant/kquant/kernels"
)

// TestMXFP8SwizzledScales: the MXFP8 quantize kernels' optional swizzled
// scale output (MXFP8Swizzled rowwise and columnwise, MXFP8BothSwizzled)
// equals the reference's GEMM layout of the contract's scales
// (internal/quant/swizzle, the columnwise matrix transposed first) and the
// standalone Swizzle kernel's layout of the kernel's own scales, every
// byte (outputs poisoned first, so padding must be written). Shapes cover
// every kernel the launchers pick: element and vector rowwise, the
// element, shared-memory and register-tile columnwise kernels, the fused
// kernel, partial 128-row and 128-column tiles.
func TestMXFP8SwizzledScales(t *testing.T) {
	shapes := []shape{{1, 8}, {1, 33}, {31, 257}, {65, 40}, {129, 136}, {300, 200}, {1000, 1000}, {4097, 64}, {2048, 2048}}
	exact, total := 0, 0
	for i, sh := range shapes {
		for _, dt := range allTypes {
			f, ocp := formats[i%2], i%3 == 1
			in := makeInput(dt, sh.n(), i%2 == 0, uint64(12000+i))
			for _, mode := range []string{"row", "col", "both"} {
				fused := mode == "both"
				if fused && (dt == kernels.F32 || sh.cols%8 != 0) {
					continue
				}
				total++
				t.Run(fmt.Sprintf("%v/%v/%s", sh, dt, mode), func(t *testing.T) {
					run(t, func(c *cuda.Ctx, b *bufs) error {
						n := sh.n()
						x := b.upload(in.raw)
						type operand struct {
							colwise         bool
							data, sc, swz   cuda.Buffer
							wantSc, wantSwz []byte
							srows, scols    int
						}
						var ops []*operand
						for _, colwise := range []bool{false, true} {
							if (mode == "row" && colwise) || (mode == "col" && !colwise) {
								continue
							}
							_, wantSc := modelMXFP8(in.vals, sh.rows, sh.cols, colwise, f, ocp)
							sr, sc := kernels.MXFP8ScaleShape(sh.rows, sh.cols, colwise)
							src, r, cc := wantSc, sr, sc
							if colwise {
								src, r, cc = swizzle.Transpose(wantSc, sr, sc), sc, sr
							}
							wantSwz, err := swizzle.Swizzle(src, r, cc)
							if err != nil {
								return err
							}
							ops = append(ops, &operand{colwise: colwise, data: b.alloc(n, 0xAA), sc: b.alloc(len(wantSc), 0xAA),
								swz: b.alloc(len(wantSc), 0x55), wantSc: wantSc, wantSwz: wantSwz, srows: sr, scols: sc})
						}
						st := b.alloc(kernels.StateBytes, 0)
						if fused {
							r, cl := ops[0], ops[1]
							if !kernels.MXFP8BothFits(dt, sh.rows, sh.cols, x, r.data, r.sc, cl.data, cl.sc) {
								return fmt.Errorf("MXFP8BothFits refused %v %v", sh, dt)
							}
							if err := set.MXFP8BothSwizzled(c, stream, dt, x, sh.rows, sh.cols, r.data, r.sc, r.swz, cl.data, cl.sc, cl.swz, f, ocp, st); err != nil {
								return err
							}
						} else {
							o := ops[0]
							if err := set.MXFP8Swizzled(c, stream, dt, x, sh.rows, sh.cols, o.data, o.sc, o.swz, o.colwise, f, ocp, st); err != nil {
								return err
							}
						}
						ok := true
						for _, o := range ops {
							what := fmt.Sprintf("colwise=%v", o.colwise)
							if d := diffBytes(download(c, o.sc, len(o.wantSc)), o.wantSc, nil); d != "" {
								t.Errorf("%s scales: %s", what, d)
								ok = false
							}
							got := download(c, o.swz, len(o.wantSwz))
							if d := diffBytes(got, o.wantSwz, nil); d != "" {
								t.Errorf("%s swizzled scales from the quantize kernel vs the reference swizzle: %s", what, d)
								ok = false
							}
							alone := b.alloc(len(o.wantSc), 0x33)
							if err := set.Swizzle(c, stream, o.sc, o.srows, o.scols, alone, o.colwise); err != nil {
								return err
							}
							if d := diffBytes(got, download(c, alone, len(o.wantSc)), nil); d != "" {
								t.Errorf("%s swizzled scales from the quantize kernel vs kernels.Swizzle: %s", what, d)
								ok = false
							}
						}
						if ok {
							exact++
						}
						return nil
					})
				})
			}
		}
	}
	t.Logf("MXFP8 swizzled scales written by the quantize kernels: %d of %d cases equal to the reference swizzle and to kernels.Swizzle", exact, total)
}
