// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package kernels_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/reference"
	"github.com/kquant/kquant/kernels"
)

// fastShapes take the NVFP4 kernels' fast paths (rowwise: columns a
// multiple of 64; columnwise, RHT amax and 2D: rows as well), including a
// last tile half outside the tensor (320 columns) and several row tiles.
var fastShapes = []shape{{64, 64}, {64, 320}, {128, 192}, {192, 128}, {1024, 1024}, {512, 4096}}

// TestNVFP4Fast is TestNVFP4 over shapes that exercise the fast paths, all
// input types, normal and special values, the three roles: every output
// byte equal to the reference.
func TestNVFP4Fast(t *testing.T) {
	exact, total := nvfp4FastCheck(t, fastShapes, 0)
	t.Logf("NVFP4 fast paths: %d of %d outputs bit-exact with the reference (%v)", exact, total, kernels.BF16)
}

// TestNVFP4FastTiles is TestNVFP4Fast with the persistent tiled kernel's
// grid (the columnwise fast path) capped at a few blocks
// (Set.SetTileGridCap), so that every block takes several tiles (the
// cp.async prefetch of the next tile, an uneven share, a half tile) on
// tensors that one block per tile would cover. The cap holds the amax
// kernel's one-wave grid too, so that its blocks share fewer, longer runs.
//
// It also takes the 1D operands' amaxes with kernels.NVFP4Amaxes (one
// pass for both where the RHT applies) instead of two NVFP4Amax calls,
// and the 16x16 weight's operands one at a time (the rowwise operand
// alone, then the columnwise one).
//
// The columnwise fast path runs with its tiles in the claimed order (a
// state in NVFP4Opts), each launch twice, as well as striding statically.
func TestNVFP4FastTiles(t *testing.T) {
	nvfp4Amaxes, nvfp4TwoDSplit = true, true
	defer func() { nvfp4Amaxes, nvfp4TwoDSplit, nvfp4Claimed = false, false, false }()
	for _, claimed := range []bool{false, true} {
		nvfp4Claimed = claimed
		for _, blocks := range []int{1, 5} {
			old := set.SetTileGridCap(blocks)
			exact, total := nvfp4FastCheck(t, []shape{{64, 320}, {192, 128}, {1024, 1024}, {512, 4096}}, 8300+100*blocks)
			set.SetTileGridCap(old)
			t.Logf("NVFP4 fast paths, %d blocks, claimed order %v: %d of %d outputs bit-exact with the reference", blocks, claimed, exact, total)
		}
	}
}

// nvfp4Amaxes makes nvfp4GPU take a 1D RHT plan's amaxes with
// kernels.NVFP4Amaxes; nvfp4TwoDSplit makes it write a 16x16 weight's
// operands in two NVFP4TwoD calls, rowwise and then columnwise;
// nvfp4Claimed gives its NVFP4Col calls a state (NVFP4Opts.State).
var nvfp4Amaxes, nvfp4TwoDSplit, nvfp4Claimed bool

// nvfp4FastCheck runs TestNVFP4Fast's checks over shapes (inputs seeded
// from base), returning the outputs bit-exact and the outputs checked.
func nvfp4FastCheck(t *testing.T, shapes []shape, base int) (exact, total int) {
	ctx := context.Background()
	i := base
	for _, sh := range shapes {
		for _, dt := range allTypes {
			for _, sp := range []bool{false, true} {
				i++
				in := makeInput(dt, sh.n(), sp, uint64(8100+i))
				x := tensorOf(in, sh.rows, sh.cols)
				for _, role := range []quant.TensorRole{quant.Input, quant.Gradient, quant.Weight} {
					name := fmt.Sprintf("%v/%v/specials=%v/%s", sh, dt, sp, role)
					r := quant.DefaultRecipe(quant.NVFP4BlockScaling)
					if nvfp4SignMask != 0 {
						r.NVFP4.RHTSignMask = nvfp4SignMask
					}
					seed := uint64(0xFA570000 + i)
					ref := refQuantize(t, r, role, x, seed)
					deq, err := reference.New().Dequantize(ctx, ref, quant.UsageRowwise)
					if err != nil {
						t.Fatal(err)
					}
					run(t, func(c *cuda.Ctx, b *bufs) error {
						got, err := nvfp4GPU(c, b, dt, in.raw, sh.rows, sh.cols, ref.Plan, seed)
						if err != nil {
							return err
						}
						n := 0
						n += check(t, name+": rowwise data", got.rowData, ref.Rowwise.Data, nil)
						n += check(t, name+": rowwise scales", got.rowScales, ref.Rowwise.ScaleCodes, nil)
						n += check(t, name+": rowwise swizzled", got.rowSwz, ref.Rowwise.Swizzled, nil)
						n += check(t, name+": rowwise amax", got.rowAmax, f32Bytes([]float32{ref.Rowwise.Amax}), nil)
						n += check(t, name+": columnwise data", got.colData, ref.Columnwise.Data, nil)
						n += check(t, name+": columnwise scales", got.colScales, ref.Columnwise.ScaleCodes, nil)
						n += check(t, name+": columnwise swizzled", got.colSwz, ref.Columnwise.Swizzled, nil)
						n += check(t, name+": columnwise amax", got.colAmax, f32Bytes([]float32{ref.Columnwise.Amax}), nil)
						if d := sameFloats(got.rowDeq, f32Bytes(deq.Data)); d != "" {
							t.Errorf("%s: rowwise dequantize: %s", name, d)
						} else {
							n++
						}
						exact += n
						total += 9
						return nil
					})
				}
			}
		}
	}
	return exact, total
}
