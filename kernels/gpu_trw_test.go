// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package kernels_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/kernels"
)

// TestCastTransposeTiles runs the 128x128-tile cast+transpose on shapes
// with more tiles than the resident blocks (528 on 132 SMs: 1089 tiles go
// to 363 blocks of 3, 625 to 313 blocks of 2 or 1), so that a block
// strides over several tiles and its pipeline (the next tile's
// loads before the current one's transposed stores, the two shared tiles)
// runs, with partial tiles in both directions; the small shapes of
// TestCurrentScaling and TestDelayedScaling give each block one tile.
// Current scaling (CastTranspose) and three delayed steps with the fused
// update (CastTransposeUpdate), every byte against the model.
func TestCastTransposeTiles(t *testing.T) {
	shapes := []shape{{4112, 4104}, {3088, 3080}}
	types := []kernels.DType{kernels.BF16, kernels.F16}
	exact, total := 0, 0
	for si, sh := range shapes {
		for ti, dt := range types {
			f := formats[(si+ti)%len(formats)]
			specials := ti == 1
			name := fmt.Sprintf("%v/%v/%v/specials=%v", sh, dt, elemType(f), specials)
			total++
			t.Run(name, func(t *testing.T) {
				n := sh.n()
				seed := uint64(1000 + 10*si + ti)
				ok := true
				run(t, func(c *cuda.Ctx, b *bufs) error {
					// Current scaling.
					in := makeInput(dt, n, specials, seed)
					want := modelCurrentScale(in.vals, f, 0, false)
					wantRow := modelCast(in.vals, want.scale, f)
					x := b.upload(in.raw)
					st := b.alloc(kernels.StateBytes, 0)
					row, col := b.alloc(n, 0xAA), b.alloc(n, 0xAA)
					sinv := b.alloc(4, 0xAA)
					if err := set.Amax(c, stream, dt, x, n, st, f, 0, false); err != nil {
						return err
					}
					if err := set.CastTranspose(c, stream, dt, x, sh.rows, sh.cols, st, row, col, sinv, cuda.Buffer{}, f); err != nil {
						return err
					}
					if d := diffBytes(download(c, row, n), wantRow, in.vals); d != "" {
						t.Errorf("current rowwise: %s", d)
						ok = false
					}
					if d := diffBytes(download(c, col, n), transpose(wantRow, sh.rows, sh.cols), nil); d != "" {
						t.Errorf("current columnwise: %s", d)
						ok = false
					}
					if g := f32At(download(c, sinv, 4), 0); !sameF32(g, want.scaleInv) {
						t.Errorf("current scale_inv %g, want %g", g, want.scaleInv)
						ok = false
					}
					// Delayed scaling, the update fused into the cast.
					const histLen = 16
					model := newDelayedModel(histLen)
					dst := b.alloc(kernels.StateBytes, 0)
					one := make([]byte, 4)
					binary.LittleEndian.PutUint32(one, math.Float32bits(1))
					if err := c.CopyToDevice(dst.Slice(kernels.StateScaleOffset, 4), one); err != nil {
						return err
					}
					hist := b.alloc(4*histLen, 0)
					for step := range 3 {
						in := makeInput(dt, n, specials && step == 1, seed+uint64(step+1))
						if err := c.CopyToDevice(x, in.raw); err != nil {
							return err
						}
						wantRow, wantSinv := model.step(in.vals, f)
						model.update(f, 0, false)
						u := kernels.Update{HistoryLen: histLen}
						if err := set.CastTransposeUpdate(c, stream, dt, x, sh.rows, sh.cols, dst, row, col, sinv, hist, f, u); err != nil {
							return err
						}
						if d := diffBytes(download(c, row, n), wantRow, in.vals); d != "" {
							t.Errorf("delayed step %d rowwise: %s", step, d)
							ok = false
						}
						if d := diffBytes(download(c, col, n), transpose(wantRow, sh.rows, sh.cols), nil); d != "" {
							t.Errorf("delayed step %d columnwise: %s", step, d)
							ok = false
						}
						if g := f32At(download(c, sinv, 4), 0); !sameF32(g, wantSinv) {
							t.Errorf("delayed step %d scale_inv %g, want %g", step, g, wantSinv)
							ok = false
						}
						gs := download(c, dst, kernels.StateBytes)
						if binary.LittleEndian.Uint64(gs) != 0 {
							t.Errorf("delayed step %d: amax scratch words not reset: %x", step, gs[:8])
							ok = false
						}
						if g := f32At(gs, kernels.StateScaleOffset); !sameF32(g, model.scale) {
							t.Errorf("delayed step %d scale %g, want %g", step, g, model.scale)
							ok = false
						}
						gh := download(c, hist, 4*histLen)
						for k, w := range model.hist {
							if g := f32At(gh, 4*k); !sameF32(g, w) {
								t.Errorf("delayed step %d history[%d] = %g, want %g", step, k, g, w)
								ok = false
								break
							}
						}
					}
					return nil
				})
				if ok {
					exact++
				}
			})
		}
	}
	t.Logf("cast+transpose over several tiles per block: %d of %d cases bit-exact", exact, total)
}
