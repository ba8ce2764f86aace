// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package kernels_test

import (
	"fmt"
	"testing"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/kernels"
)

// TestMXFP8Both: the fused kernel against the contract's rowwise and
// columnwise MXFP8 (data, padded scales, fused amax), both scale roundings,
// 16-bit inputs, outputs poisoned first so that every byte must be written.
// The extra shapes cover cols % 16 == 8 (8-byte stores), partial tiles and
// row bands, and tiles that only write scale padding.
func TestMXFP8Both(t *testing.T) {
	extra := []shape{{1, 8}, {16, 8}, {48, 24}, {80, 200}, {129, 136}, {96, 192}, {200, 72}}
	var specs []caseSpec
	for _, cs := range cases([]kernels.DType{kernels.BF16, kernels.F16}, formats) {
		if cs.sh.n() <= 1<<24 {
			specs = append(specs, cs)
		}
	}
	for _, sh := range extra {
		for _, dt := range []kernels.DType{kernels.BF16, kernels.F16} {
			for _, f := range formats {
				for _, sp := range []bool{false, true} {
					specs = append(specs, caseSpec{sh, dt, f, sp})
				}
			}
		}
	}
	exact, total, skipped := 0, 0, 0
	for i, cs := range specs {
		if cs.sh.cols%8 != 0 {
			skipped++
			continue
		}
		for _, ocp := range []bool{false, true} {
			total++
			t.Run(fmt.Sprintf("%v/ocp=%v", cs, ocp), func(t *testing.T) {
				in := makeInput(cs.dt, cs.sh.n(), cs.specials, uint64(9000+i))
				rowData, rowSc := modelMXFP8(in.vals, cs.sh.rows, cs.sh.cols, false, cs.f, ocp)
				colData, colSc := modelMXFP8(in.vals, cs.sh.rows, cs.sh.cols, true, cs.f, ocp)
				run(t, func(c *cuda.Ctx, b *bufs) error {
					n := cs.sh.n()
					x := b.upload(in.raw)
					or, oc := b.alloc(n, 0xAA), b.alloc(n, 0xAA)
					sr, sc := b.alloc(len(rowSc), 0xAA), b.alloc(len(colSc), 0xAA)
					st := b.alloc(kernels.StateBytes, 0)
					if !kernels.MXFP8BothFits(cs.dt, cs.sh.rows, cs.sh.cols, x, or, sr, oc, sc) {
						return fmt.Errorf("MXFP8BothFits refused an aligned %v", cs)
					}
					if err := set.MXFP8Both(c, stream, cs.dt, x, cs.sh.rows, cs.sh.cols, or, sr, oc, sc, cs.f, ocp, st); err != nil {
						return err
					}
					ok := true
					if g, w := f32At(download(c, st, kernels.StateBytes), kernels.StateAmaxOffset), amaxOf(in.vals); !sameF32(g, w) {
						t.Errorf("fused amax %g, want %g", g, w)
						ok = false
					}
					for _, o := range []struct {
						what string
						buf  cuda.Buffer
						want []byte
						raw  []float32
					}{{"rowwise data", or, rowData, in.vals}, {"rowwise scales", sr, rowSc, nil}, {"columnwise data", oc, colData, in.vals}, {"columnwise scales", sc, colSc, nil}} {
						if d := diffBytes(download(c, o.buf, len(o.want)), o.want, o.raw); d != "" {
							t.Errorf("%s: %s", o.what, d)
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
	t.Logf("MXFP8 both operands, fused: %d of %d cases bit-exact (both data, both padded scales, amax); %d shapes with cols %% 8 != 0 left to the two kernels", exact, total, skipped)
}
