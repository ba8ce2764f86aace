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

// TestNVFP42DVariants: the persistent 2D kernel of 16-bit inputs
// (kq_nvf4_2dp_, NVFP42DEnv "pipe") gives the one-shot kernel's
// (kq_nvf4_2d_, "one") bytes, every one:
// codes, plain and swizzled scales of both operands, written together and
// one operand alone, outputs poisoned first. The shapes are the fast
// paths' (fastShapes, partial 256-column pieces at 320 and 576 columns)
// with the grid balanced and capped at 1, 3 and 5 blocks
// (Set.SetTileGridCap), so that blocks take several pieces, an uneven
// share, and the next piece's loads from another row band. TestNVFP4Fast
// checks the default choice (the persistent kernel for both operands, the
// one-shot kernel for one) against the reference.
func TestNVFP42DVariants(t *testing.T) {
	small := append(append([]shape(nil), fastShapes...), shape{320, 576}, shape{128, 2112})
	shapes := append(small, bigShapes()...)
	// Which operands a call writes: both, rowwise alone, columnwise alone.
	type mode struct {
		name     string
		row, col bool
	}
	allModes := []mode{{"both", true, true}, {"rowwise", true, false}, {"columnwise", false, true}}
	exact, total := 0, 0
	for i, sh := range shapes {
		// The big shapes: the balanced grid and both operands only.
		caps, modes := []int{0, 1, 3, 5}, allModes
		if i >= len(small) {
			caps, modes = []int{0}, allModes[:1]
		}
		for _, dt := range []kernels.DType{kernels.BF16, kernels.F16} {
			for _, sp := range []bool{false, true} {
				in := makeInput(dt, sh.n(), sp, uint64(16000+i))
				for _, capped := range caps {
					for _, m := range modes {
						total++
						name := fmt.Sprintf("%v/%v/specials=%v/cap=%d/%s", sh, dt, sp, capped, m.name)
						t.Run(name, func(t *testing.T) {
							if nvfp42DSame(t, in, dt, sh, capped, m.row, m.col) {
								exact++
							}
						})
					}
				}
			}
		}
	}
	t.Logf("NVFP4 2D variants: %d of %d cases byte-identical (pipe vs one)", exact, total)
}

// nvfp42DSame runs NVFP4TwoD with the one-shot kernel ("one") and with "pipe"
// (the grid capped at capped blocks, 0 for none) on one input and
// reports whether every output byte agrees.
func nvfp42DSame(t *testing.T, in input, dt kernels.DType, sh shape, capped int, row, col bool) bool {
	ok := true
	run(t, func(c *cuda.Ctx, b *bufs) error {
		rows, cols := sh.rows, sh.cols
		x := b.upload(in.raw)
		amax := b.alloc(4, 0)
		if err := set.NVFP4Amax(c, stream, dt, x, rows, cols, amax, false, 0); err != nil {
			return err
		}
		rowB, colB := rows*kernels.NVFP4RowBytes(cols), cols*kernels.NVFP4RowBytes(rows)
		rsr, rsc := kernels.NVFP4ScaleShape(rows, cols, false)
		csr, csc := kernels.NVFP4ScaleShape(rows, cols, true)
		sizes := []int{rowB, rsr * rsc, rsr * rsc, colB, csr * csc, csr * csc}
		what := []string{"rowwise codes", "rowwise scales", "rowwise swizzled", "columnwise codes", "columnwise scales", "columnwise swizzled"}
		var want [][]byte
		for _, v := range []string{"one", "pipe"} {
			old, err := set.SetNVFP42D(v)
			if err != nil {
				return err
			}
			o := make([]cuda.Buffer, len(sizes))
			for k, n := range sizes {
				o[k] = b.alloc(n, byte(0xA5+k))
			}
			if !row {
				o[0], o[1], o[2] = cuda.Buffer{}, cuda.Buffer{}, cuda.Buffer{}
			}
			if !col {
				o[3], o[4], o[5] = cuda.Buffer{}, cuda.Buffer{}, cuda.Buffer{}
			}
			oldCap := set.SetTileGridCap(capped)
			err = set.NVFP4TwoD(c, stream, dt, x, rows, cols, amax, o[0], o[1], o[2], o[3], o[4], o[5])
			set.SetTileGridCap(oldCap)
			if _, e := set.SetNVFP42D(old); err == nil {
				err = e
			}
			if err != nil {
				return err
			}
			got := make([][]byte, len(sizes))
			for k, n := range sizes {
				if o[k].Ptr() != 0 {
					got[k] = download(c, o[k], n)
				}
			}
			if want == nil {
				want = got
				continue
			}
			for k := range sizes {
				if d := diffBytes(got[k], want[k], nil); d != "" {
					t.Errorf("pipe vs one: %s: %s", what[k], d)
					ok = false
				}
			}
		}
		return nil
	})
	return ok
}
