// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package kernels

import (
	"fmt"

	"github.com/kquant/kquant/internal/cuda"
)

// The per-tensor FP8 launchers: amax and scale, cast, cast+transpose, the
// delayed-scaling update, and the conversions the tests check the hardware
// with. The grouped (MoE) forms are in grouped_fp8.go, the block-scaled
// formats in mxfp8.go, block.go and nvfp4.go.

// Amax computes the amax of the n elements of x and, from it, the current
// scaling scale (contract: "Per-tensor scale from an amax"), into state.
// The state's amax is the raw amax (as TE's amax tensor); eps only enters
// the scale. One launch.
func (s *Set) Amax(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, n int, state cuda.Buffer, f Format, eps float32, pow2 bool) error {
	s.args.Reset().Buffer(x).I64(int64(n)).Buffer(state).F32(f.MaxFinite()).F32(eps).I32(b2i(pow2))
	grid := s.residentGrid(int64(n), unrolled)
	if dt.Size() == 2 {
		// 16-bit inputs: chunks of castChunk elements (kq_amax_impl's
		// chunk loop), balanced over the resident blocks as in
		// CastUpdate.
		chunks := (int64(n) + castChunk - 1) / castChunk
		grid = cuda.Dim(int(balancedGrid(chunks, int64(s.sms*residentPerSM))))
	}
	return s.launch(c, "kq_amax_"+dt.suffix(), grid, cuda.Dim(threads), st)
}

// Cast converts the n elements of x times the state's scale to FP8 into out
// (same layout), writes 1/scale to scaleInv, and, when history is not the
// zero Buffer (delayed scaling), also reduces the amax into history[0] and
// the state. One launch.
func (s *Set) Cast(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, n int, state, out, scaleInv, history cuda.Buffer, f Format) error {
	return s.CastUpdate(c, st, dt, x, n, state, out, scaleInv, history, f, Update{})
}

// Update is the delayed-scaling update (contract: "Delayed scaling") that a
// cast with a history runs after it, in the same launch: over the amax
// history of HistoryLen entries (0: no update), with the recipe's margin and
// amax algorithm. The bytes are DelayedUpdate's after the cast.
type Update struct {
	HistoryLen int
	Margin     int
	MostRecent bool
}

// args appends the update's kernel parameters (length, fp8 max, margin,
// most_recent) for format f.
func (u Update) args(a *cuda.Args, f Format) {
	a.I32(int32(u.HistoryLen)).F32(f.MaxFinite()).I32(int32(u.Margin)).I32(b2i(u.MostRecent))
}

// CastUpdate is Cast with delayed scaling (history not the zero Buffer)
// ending in the update u, in one launch: the last block to finish runs the
// update on the history and the state's scale, as DelayedUpdate would
// after the cast.
func (s *Set) CastUpdate(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, n int, state, out, scaleInv, history cuda.Buffer, f Format, u Update) error {
	if err := checkUpdate(history, u); err != nil {
		return err
	}
	s.args.Reset().Buffer(x).I64(int64(n)).Buffer(state).Buffer(out).Ptr(optional(scaleInv)).Ptr(optional(history)).I32(int32(f))
	u.args(&s.args, f)
	var grid cuda.Dim3
	switch chunks := (int64(n) + castChunk - 1) / castChunk; {
	case dt.Size() != 2:
		grid = s.residentGrid(int64(n), unrolled)
	case history.Ptr() == 0:
		// Current scaling, 16-bit inputs: no amax to commit, so one
		// block per chunk of castChunk elements, as its cast+transpose
		// takes one per tile (on an H100, 1.7-2.8% faster than the
		// balanced grid at 8192^2 and 16384^2; docs/benchmarks.md).
		grid = cuda.Dim(int(max(chunks, 1)))
	default:
		// Delayed scaling, 16-bit inputs: the resident blocks striding
		// over the chunks, balanced so that every block takes as many
		// chunks (or one fewer): at 8192^2 4096 chunks on 528 slots
		// would leave a last round for 400 blocks while 128 sat idle;
		// 512 blocks take 8 each. The fused amax commits once a block.
		grid = cuda.Dim(int(balancedGrid(chunks, int64(s.sms*residentPerSM))))
	}
	return s.launch(c, "kq_cast_"+dt.suffix(), grid, cuda.Dim(threads), st)
}

// checkUpdate rejects an update without a history to run on.
func checkUpdate(history cuda.Buffer, u Update) error {
	if u.HistoryLen < 0 || (u.HistoryLen > 0 && history.Ptr() == 0) {
		return fmt.Errorf("kernels: delayed update of a %d-entry history without a history buffer", u.HistoryLen)
	}
	return nil
}

// CastTranspose is Cast for a [rows, cols] tensor that writes the
// transposed data [cols, rows] to outCol and, unless outRow is the zero
// Buffer, the rowwise data to outRow, in one pass. Shapes with rows % 16 ==
// 0 and cols % 8 == 0 and aligned buffers take the 128x128-tile kernel with
// 16-byte accesses; others the 32x32 one (same bytes).
func (s *Set) CastTranspose(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, state, outRow, outCol, scaleInv, history cuda.Buffer, f Format) error {
	return s.CastTransposeUpdate(c, st, dt, x, rows, cols, state, outRow, outCol, scaleInv, history, f, Update{})
}

// CastTransposeUpdate is CastTranspose with delayed scaling ending in the
// update u, in one launch (as CastUpdate).
func (s *Set) CastTransposeUpdate(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, state, outRow, outCol, scaleInv, history cuda.Buffer, f Format, u Update) error {
	if (rows+31)/32 > 65535 {
		return fmt.Errorf("kernels: CastTranspose of %d rows: too many", rows)
	}
	if err := checkUpdate(history, u); err != nil {
		return err
	}
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(state).Ptr(optional(outRow)).Buffer(outCol).
		Ptr(optional(scaleInv)).Ptr(optional(history)).I32(int32(f))
	u.args(&s.args, f)
	if wideTranspose(rows, cols, x, outRow, outCol) {
		// Delayed scaling (history set): the resident blocks stride over
		// the tiles, so that the fused amax commits once per block (one
		// same-address atomic per tile cost more than the cast at
		// 16384^2; H200, 64x64 tiles: 60% of copy bandwidth, 80%
		// striding). Current scaling has no amax to commit here, and
		// one block per tile is faster: on an H200 (docs/benchmarks.md)
		// the both-operand step went from 86.9% to 88.5% of copy at
		// 8192^2 and from 91.3% to 95.9% at 16384^2.
		name, tile := "kq_cast_trw_"+dt.suffix(), 128
		tiles := int64((cols+tile-1)/tile) * int64((rows+tile-1)/tile)
		grid := cuda.Dim(int(tiles))
		if history.Ptr() != 0 {
			grid = s.balancedWave(c, name, tiles)
		}
		return s.launch(c, name, grid, cuda.Dim(threads), st)
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
