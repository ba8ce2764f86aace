// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package kernels_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/kernels"
)

// TestClaimedTileOrder: the persistent kernels that take their tiles in
// kq_sched_claim's order (the first rounds static, then claimed from the
// state's counter) give the same bytes on their resident grid and on grids
// capped at 7, 2 and 1 blocks (SetTileGridCap), so that most tiles are
// claimed; each launch twice on one state, so that the second finds the
// counter the first left, which must be zero, as the amax scratch. The
// MXFP8 fused and columnwise macro-tile kernels, the MXFP8 32x32 kernel
// and the delayed-scaling cast + transpose (three steps with the fused
// update), partial tiles both ways. The resident grid's bytes are checked
// against the contract by TestMXFP8Both, TestMXFP82D and
// TestCastTransposeTiles.
func TestClaimedTileOrder(t *testing.T) {
	shapes := []shape{{129, 136}, {1000, 1000}, {520, 4104}, {2048, 2048}}
	caps := []int{0, 7, 2, 1}
	exact, total := 0, 0
	for i, sh := range shapes {
		for _, dt := range []kernels.DType{kernels.BF16, kernels.F16} {
			f := formats[i%len(formats)]
			specials := i%2 == 1
			total++
			t.Run(fmt.Sprintf("%v/%v/%v/specials=%v", sh, dt, elemType(f), specials), func(t *testing.T) {
				in := makeInput(dt, sh.n(), specials, uint64(21000+i))
				ok := true
				run(t, func(c *cuda.Ctx, b *bufs) error {
					x := b.upload(in.raw)
					var want [][]byte
					for _, blocks := range caps {
						oldCap := set.SetTileGridCap(blocks)
						got, err := claimedOutputs(c, b, dt, x, sh, f)
						set.SetTileGridCap(oldCap)
						if err != nil {
							return err
						}
						for k, st := range got.states {
							if !bytes.Equal(st[:8], make([]byte, 8)) || binary.LittleEndian.Uint32(st[kernels.StateNextOffset:]) != 0 {
								t.Errorf("grid cap %d: %s: scratch words not reset: % x", blocks, got.stateNames[k], st)
								ok = false
							}
						}
						if blocks == caps[0] {
							want = got.outs
							continue
						}
						for k := range got.outs {
							if d := diffBytes(got.outs[k], want[k], nil); d != "" {
								t.Errorf("grid capped at %d vs resident: %s: %s", blocks, got.names[k], d)
								ok = false
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
	t.Logf("claimed tile order: %d of %d cases byte-identical (grids capped at 7, 2, 1 vs resident)", exact, total)
}

// claimed is one grid's results for TestClaimedTileOrder: every output
// (names[k] names outs[k]; the states' recipe words among them) and every
// final state (stateNames[k] names states[k]).
type claimed struct {
	names, stateNames []string
	outs, states      [][]byte
}

func claimedOutputs(c *cuda.Ctx, b *bufs, dt kernels.DType, x cuda.Buffer, sh shape, f kernels.Format) (claimed, error) {
	var r claimed
	n := sh.n()
	crs, ccs := kernels.MXFP8ScaleShape(sh.rows, sh.cols, true)
	rrs, rcs := kernels.MXFP8ScaleShape(sh.rows, sh.cols, false)
	nc, nr := crs*ccs, rrs*rcs
	add := func(name string, buf cuda.Buffer, size int) {
		r.names = append(r.names, name)
		r.outs = append(r.outs, download(c, buf, size))
	}
	state := func(name string, st cuda.Buffer) {
		r.states = append(r.states, download(c, st, kernels.StateBytes))
		r.stateNames = append(r.stateNames, name)
		r.names = append(r.names, name+" state")
		r.outs = append(r.outs, r.states[len(r.states)-1][:kernels.StateScaleInvOffset+4])
	}
	// both runs launch, a kernel writing both MXFP8 operands with their
	// swizzled scales, twice on one state and records every output.
	both := func(name string, launch func(or, sr, zr, oc, sc, zc, st cuda.Buffer) error) error {
		or, sr, zr := b.alloc(n, 0xAA), b.alloc(nr, 0xAA), b.alloc(nr, 0x55)
		oc, sc, zc := b.alloc(n, 0xAA), b.alloc(nc, 0xAA), b.alloc(nc, 0x55)
		st := b.alloc(kernels.StateBytes, 0)
		for range 2 {
			if err := launch(or, sr, zr, oc, sc, zc, st); err != nil {
				return err
			}
		}
		state(name, st)
		for _, o := range []struct {
			what string
			buf  cuda.Buffer
			size int
		}{{"rowwise data", or, n}, {"rowwise scales", sr, nr}, {"rowwise swizzled", zr, nr},
			{"columnwise data", oc, n}, {"columnwise scales", sc, nc}, {"columnwise swizzled", zc, nc}} {
			add(name+" "+o.what, o.buf, o.size)
		}
		return nil
	}
	// The MXFP8 fused kernel and the 32x32 kernel.
	if err := both("mxfp8 both", func(or, sr, zr, oc, sc, zc, st cuda.Buffer) error {
		return set.MXFP8BothSwizzled(c, stream, dt, x, sh.rows, sh.cols, or, sr, zr, oc, sc, zc, f, false, st)
	}); err != nil {
		return r, err
	}
	if err := both("mxfp8 32x32", func(or, sr, zr, oc, sc, zc, st cuda.Buffer) error {
		return set.MXFP82D(c, stream, dt, x, sh.rows, sh.cols, or, sr, zr, oc, sc, zc, f, false, st)
	}); err != nil {
		return r, err
	}
	// The columnwise-only macro-tile kernel.
	{
		oc, sc, zc := b.alloc(n, 0xAA), b.alloc(nc, 0xAA), b.alloc(nc, 0x55)
		st := b.alloc(kernels.StateBytes, 0)
		for range 2 {
			if err := set.MXFP8Swizzled(c, stream, dt, x, sh.rows, sh.cols, oc, sc, zc, true, f, true, st); err != nil {
				return r, err
			}
		}
		state("mxfp8 columnwise", st)
		add("mxfp8 columnwise data", oc, n)
		add("mxfp8 columnwise scales", sc, nc)
		add("mxfp8 columnwise swizzled", zc, nc)
	}
	// Delayed scaling: three steps of the cast + transpose with the fused
	// update, on the same input.
	{
		const histLen = 16
		st := b.alloc(kernels.StateBytes, 0)
		one := make([]byte, 4)
		binary.LittleEndian.PutUint32(one, math.Float32bits(1))
		if err := c.CopyToDevice(st.Slice(kernels.StateScaleOffset, 4), one); err != nil {
			return r, err
		}
		hist := b.alloc(4*histLen, 0)
		row, col, sinv := b.alloc(n, 0xAA), b.alloc(n, 0xAA), b.alloc(4, 0xAA)
		for range 3 {
			if err := set.CastTransposeUpdate(c, stream, dt, x, sh.rows, sh.cols, st, row, col, sinv, hist, f, kernels.Update{HistoryLen: histLen}); err != nil {
				return r, err
			}
		}
		state("delayed cast+transpose", st)
		add("delayed rowwise", row, n)
		add("delayed columnwise", col, n)
		add("delayed scale_inv", sinv, 4)
		add("delayed history", hist, 4*histLen)
	}
	return r, nil
}
