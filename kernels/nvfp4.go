// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package kernels

import (
	"fmt"

	"github.com/kquant/kquant/internal/cuda"
)

// NVFP4ScaleShape is TE's padded shape of the E4M3 scale matrix of an NVFP4
// operand of a [rows, cols] input: rowwise [roundup(rows,128),
// roundup(ceil(cols/16),4)], columnwise (data transposed) [roundup(cols,128),
// roundup(ceil(rows/16),4)].
func NVFP4ScaleShape(rows, cols int, colwise bool) (srows, scols int) {
	if colwise {
		return roundUp(cols, 128), roundUp(ceilDiv(rows, 16), 4)
	}
	return roundUp(rows, 128), roundUp(ceilDiv(cols, 16), 4)
}

// NVFP4ScalePadded reports whether NVFP4ScaleShape pads the scale matrix
// of an operand beyond its entries (rows or columns added).
func NVFP4ScalePadded(rows, cols int, colwise bool) bool {
	sr, sc := NVFP4ScaleShape(rows, cols, colwise)
	if colwise {
		return sr != cols || sc != ceilDiv(rows, 16)
	}
	return sr != rows || sc != ceilDiv(cols, 16)
}

// NVFP4RowBytes is the byte length of one packed row of cols E2M1 codes.
func NVFP4RowBytes(cols int) int { return (cols + 1) / 2 }

// NVFP4Opts are the options of one NVFP4 operand's quantize.
type NVFP4Opts struct {
	// RHT applies the random Hadamard transform with sign mask Signs
	// (columnwise operand only).
	RHT   bool
	Signs uint16
	// Stochastic rounds with the Philox stream of Seed.
	Stochastic bool
	Seed       uint64
	// Group selects group g's stream (Philox counter word 3, element
	// numbers counted from the group's first row), as the reference's
	// grouped quantize draws it for group g's rows: a per-group NVFP4Col
	// launch on a group's slice of the input then matches the reference.
	// Only NVFP4Col takes it; the grouped rowwise kernel numbers its groups
	// itself, so NVFP4Row refuses a nonzero Group.
	Group uint32
	// State, when set, is the tensor's state (StateBytes, zeroed once):
	// the resident blocks of NVFP4Col's ungrouped fast path then take
	// their tiles in a claimed order (the counter words at
	// StateNextOffset, left zero) instead of striding over them
	// statically, which let them drift apart over the tensor. The same
	// bytes either way.
	State cuda.Buffer
}

// NVFP4Amax zeroes amax (4 bytes) and reduces into it the amax of the
// input, or with rht the amax of the RHT of the columnwise operand, as the
// bits of a float32. A memset and one launch.
func (s *Set) NVFP4Amax(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, amax cuda.Buffer, rht bool, signs uint16) error {
	if err := s.zeroBytes(c, st, amax.Slice(0, 4)); err != nil {
		return fmt.Errorf("kernels: zeroing the NVFP4 amax: %w", err)
	}
	if rows == 0 || cols == 0 {
		return nil
	}
	if ceilDiv(rows, 128) > 65535 {
		return fmt.Errorf("kernels: NVFP4 amax of %d rows: too many", rows)
	}
	if rht {
		return s.nvfp4AmaxRHT(c, st, dt, x, rows, cols, amax, signs, cuda.Buffer{}, 0, cuda.Buffer{}, cuda.Buffer{})
	}
	return s.nvfp4Amax(c, st, dt, x, rows, cols, amax, cuda.Buffer{}, 0, cuda.Buffer{})
}

// NVFP4Amaxes is NVFP4Amax without the RHT into amax and with it into
// amaxRHT (each 4 bytes, zeroed first), the same bytes as those two
// calls: where the tiled fast path covers the input (rows and columns
// multiples of 64, x 16-byte aligned) one kernel reads the input once for
// both (two memsets and one launch), else the two calls.
func (s *Set) NVFP4Amaxes(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, amax, amaxRHT cuda.Buffer, signs uint16) error {
	if !NVFP4AmaxesOnePass(rows, cols, x) {
		if err := s.NVFP4Amax(c, st, dt, x, rows, cols, amax, false, 0); err != nil {
			return err
		}
		return s.NVFP4Amax(c, st, dt, x, rows, cols, amaxRHT, true, signs)
	}
	for _, b := range []cuda.Buffer{amax, amaxRHT} {
		if err := s.zeroBytes(c, st, b.Slice(0, 4)); err != nil {
			return fmt.Errorf("kernels: zeroing the NVFP4 amax: %w", err)
		}
	}
	return s.nvfp4AmaxRHT(c, st, dt, x, rows, cols, amaxRHT, signs, cuda.Buffer{}, 0, cuda.Buffer{}, amax)
}

// NVFP4AmaxesOnePass reports whether NVFP4Amaxes reads the [rows, cols]
// input x once (one launch) rather than twice (two): whether the RHT amax
// kernel takes its tiled fast path, the one path that also reduces the
// plain amax.
func NVFP4AmaxesOnePass(rows, cols int, x cuda.Buffer) bool {
	return nvfp4Tiled(rows, cols) && aligned(16, x)
}

// nvfp4AmaxRHT launches the RHT amax; grouped (offsets set), each row
// tile reduces into amax[g] of its group g (the caller zeroes them), one
// tile per block. Ungrouped on the fast path, a block takes 128 columns
// of every grid.y-th 64-row tile (nvfp4AmaxRHTRows).
// plain, unless the zero Buffer (ungrouped, fast path only), also
// receives the input's own amax (NVFP4Amaxes).
func (s *Set) nvfp4AmaxRHT(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, amax cuda.Buffer, signs uint16, offsets cuda.Buffer, groups int, flag, plain cuda.Buffer) error {
	name := "kq_nvf4_amax_rht_" + dt.suffix()
	fast := NVFP4AmaxesOnePass(rows, cols, x)
	grid := cuda.Dim2(ceilDiv(cols, 256), ceilDiv(rows, 128))
	if fast {
		gx, gy := ceilDiv(cols, 128), rows/64
		if offsets.Ptr() == 0 {
			gy = s.nvfp4AmaxRHTRows(c, name, gx, gy)
		}
		grid = cuda.Dim2(gx, gy)
	}
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(amax).U32(uint32(signs)).I32(b2i(fast)).
		Ptr(optional(offsets)).I32(int32(groups)).Ptr(optional(flag)).Ptr(optional(plain))
	return s.launch(c, name, grid, cuda.Dim(threads), st)
}

// nvfp4AmaxRHTRows is grid.y of the ungrouped fast RHT amax kernel name
// over gx column blocks and tiles 64-row tiles: each block strides over
// the row tiles of its 128 columns, and the grid holds no more blocks
// than fit at once (waveSlots: 4 a SM at its 61 registers; the tests' cap
// when set), so that no block waits for a second wave; at least one.
func (s *Set) nvfp4AmaxRHTRows(c *cuda.Ctx, name string, gx, tiles int) int {
	return max(1, min(tiles, int(s.waveSlots(c, name))/gx))
}

func (s *Set) nvfp4Amax(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, amax, offsets cuda.Buffer, groups int, flag cuda.Buffer) error {
	// Each 128-row tile is contiguous; blocks share a tile
	// (nvfp4AmaxShare).
	name := "kq_nvf4_amax_" + dt.suffix()
	tiles := ceilDiv(rows, 128)
	gx := s.nvfp4AmaxShare(c, name, dt, cols, tiles)
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(amax).Ptr(optional(offsets)).I32(int32(groups)).Ptr(optional(flag)).
		I32(b2i(aligned(16, x)))
	return s.launch(c, name, cuda.Dim2(gx, tiles), cuda.Dim(threads), st)
}

// nvfp4AmaxShare is how many blocks of kernel name (kq_nvf4_amax_ of dt)
// share each of `tiles` 128-row tiles (grid.x): at least four 16-byte
// vectors a thread, and no more blocks in all than one wave holds
// (waveSlots), so that none waits for a second, part-empty one. Rounding the share up from 8 blocks
// a SM instead gave 1152 blocks at 16384 rows and 1088 at
// 8192 for the 1056 that fit (32 registers, 8 a SM): one wave of 1024
// took the kernel from 68.8 to 64.2 us and 82% to 88% of DRAM bandwidth
// (ncu, 16384x8192 BF16, H200).
func (s *Set) nvfp4AmaxShare(c *cuda.Ctx, name string, dt DType, cols, tiles int) int {
	perTile := ceilDiv(128*cols*dt.Size(), 16*threads*4)
	return max(1, min(perTile, int(s.waveSlots(c, name))/tiles))
}

// nvfp4Tiled reports whether the tiled fast paths (64-row x 128-column
// tiles, 16-byte vectors) cover a [rows, cols] input: whole 64-row tiles
// and 64-column multiples, at most 65535 tiles down.
func nvfp4Tiled(rows, cols int) bool {
	return rows%64 == 0 && cols%64 == 0 && rows > 0 && cols > 0 && rows/64 <= 65535
}

// nvfp4Need checks an operand's buffers for op: the scales in
// NVFP4ScaleShape, whose shape it returns, and the packed codes (the
// columnwise ones transposed).
func nvfp4Need(op string, rows, cols int, colwise bool, out, scales cuda.Buffer) (sr, sc int, err error) {
	sr, sc = NVFP4ScaleShape(rows, cols, colwise)
	data := rows * NVFP4RowBytes(cols)
	if colwise {
		data = cols * NVFP4RowBytes(rows)
	}
	if err := needAll(op, bufNeed{what: "scales", buf: scales, n: sr * sc}, bufNeed{what: "data", buf: out, n: data}); err != nil {
		return 0, 0, err
	}
	return sr, sc, nil
}

// NVFP4Row quantizes the rowwise operand in 1x16 blocks with the tensor
// scale from amax (NVFP4Amax): packed codes to out (rows of
// NVFP4RowBytes(cols)), E4M3 scales to scales (NVFP4ScaleShape, padding
// written as zero) and, unless swz is the zero Buffer, the same scales in
// the GEMM swizzled layout to swz. o.RHT is ignored. One launch.
func (s *Set) NVFP4Row(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, amax, out, scales, swz cuda.Buffer, o NVFP4Opts) error {
	sr, sc, err := nvfp4Need("NVFP4Row", rows, cols, false, out, scales)
	if err != nil {
		return err
	}
	if o.Group != 0 {
		return fmt.Errorf("kernels: NVFP4Row takes no group stream (group %d): use GroupedNVFP4Row", o.Group)
	}
	return s.nvfp4Row(c, st, dt, x, rows, cols, amax, out, scales, swz, sr, sc, o, cuda.Buffer{}, 0, cuda.Buffer{})
}

func (s *Set) nvfp4Row(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, amax, out, scales, swz cuda.Buffer, sr, sc int, o NVFP4Opts, offsets cuda.Buffer, groups int, flag cuda.Buffer) error {
	if sr == 0 || sc == 0 {
		return nil
	}
	// vec: 0 element loads, 1 16-byte loads, 2 the fast path (whole
	// 64-element row pieces, 16-byte aligned data, 4-byte scale words).
	vec := b2i(cols%16 == 0 && aligned(16, x))
	items := int64(sr) * int64(sc)
	if cols%64 == 0 && aligned(16, x, out) && aligned(4, scales, swz) {
		vec, items = 2, items/4
	}
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(amax).Buffer(out).Buffer(scales).
		I32(int32(sr)).I32(int32(sc)).Ptr(optional(swz)).I32(b2i(o.Stochastic)).U64(o.Seed).I32(vec).
		Ptr(optional(offsets)).I32(int32(groups)).Ptr(optional(flag))
	// A block per 256 items up to wavesPerSM a SM: 2.67 waves of its 3
	// resident blocks a SM (80 registers) on large tensors. One wave of
	// them, each block a balanced share (waveSlots), measured 2.5% slower
	// (ncu, 16384x8192 BF16, H200: 107.6 against 105.0 us).
	return s.launch(c, "kq_nvf4_row_"+dt.suffix(), s.grid(items, 1), cuda.Dim(threads), st)
}

// NVFP4Col quantizes the columnwise operand: the input transposed
// ([cols, rows], rows of NVFP4RowBytes(rows)), with the RHT and stochastic
// rounding of o, the tensor scale from amax (NVFP4Amax with the same RHT
// setting). Scales and swz as NVFP4Row. One launch.
func (s *Set) NVFP4Col(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, amax, out, scales, swz cuda.Buffer, o NVFP4Opts) error {
	sr, sc, err := nvfp4Need("NVFP4Col", rows, cols, true, out, scales)
	if err != nil {
		return err
	}
	if sr == 0 || sc == 0 {
		return nil
	}
	return s.nvfp4Col(c, st, dt, x, rows, cols, amax, out, scales, swz, sr, sc, o, cuda.Buffer{}, 0, cuda.Buffer{})
}

// nvfp4Col launches the columnwise quantize. Grouped (offsets set), each
// row tile (64 rows on the fast path, 128 otherwise) quantizes into its
// group g's tensor: amax[g], group g's stream, codes [cols, n_g] at byte
// cols*o_g/2 of out, scales [sr, n_g/16] at sr*o_g/16 of scales and swz
// (sc is then unused); rows must be 128-row aligned groups, else the flag
// is set and the launch does nothing.
func (s *Set) nvfp4Col(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, amax, out, scales, swz cuda.Buffer, sr, sc int, o NVFP4Opts, offsets cuda.Buffer, groups int, flag cuda.Buffer) error {
	if ceilDiv(sc, 8) > 65535 || ceilDiv(rows, 128) > 65535 {
		return fmt.Errorf("kernels: NVFP4Col of %d rows: too many", rows)
	}
	if err := needAll("NVFP4Col", bufNeed{"state", o.State, StateBytes, true}); err != nil {
		return err
	}
	// The fast path writes the swizzled scales a 16-byte word a lane.
	fast := nvfp4Tiled(rows, cols) && aligned(16, x, out, swz) && aligned(4, scales)
	grid := cuda.Dim2(sr/32, ceilDiv(sc, 8))
	name := "kq_nvf4_col_" + dt.suffix()
	switch {
	case fast && offsets.Ptr() == 0:
		// The resident blocks (tileGrid: 4 a SM at kq_nvf4_col_'s 64
		// registers) over the 128-column x 64-row tiles, each block taking
		// several (every grid-th, or in the claimed order with
		// NVFP4Opts.State), so that the next tile's loads overlap the
		// current one's work (nvfp4_tile.cuh).
		grid = s.tileGrid(c, name, sr/128, rows/64)
	case fast:
		grid = cuda.Dim2(sr/128, rows/64)
	case offsets.Ptr() != 0:
		grid = cuda.Dim2(sr/32, ceilDiv(rows, 128))
	}
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(amax).Buffer(out).Buffer(scales).
		I32(int32(sr)).I32(int32(sc)).Ptr(optional(swz)).I32(b2i(o.RHT)).U32(uint32(o.Signs)).I32(b2i(o.Stochastic)).U64(o.Seed).
		U32(o.Group).I32(b2i(fast)).Ptr(optional(offsets)).I32(int32(groups)).Ptr(optional(flag)).Ptr(optional(o.State))
	return s.launch(c, name, grid, cuda.Dim(threads), st)
}

// NVFP4TwoD quantizes with 16x16 tiles (weights) and the tensor scale from
// amax (NVFP4Amax without RHT): unless outRow is the zero Buffer the
// rowwise codes and scales, and unless outCol is the zero Buffer the
// columnwise operand (the same codes transposed, transposed scale
// entries); an operand not wanted is not written at all. swzRow and swzCol, unless zero Buffers,
// receive the scales in the GEMM swizzled layout, written by the kernel
// itself (no Swizzle launch). One launch, after a memset of each scale
// buffer whose padded shape (NVFP4ScaleShape) has padding: the kernel
// writes every entry of the unpadded part.
func (s *Set) NVFP4TwoD(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, amax, outRow, scalesRow, swzRow, outCol, scalesCol, swzCol cuda.Buffer) error {
	srr, scr := NVFP4ScaleShape(rows, cols, false)
	src, scc := NVFP4ScaleShape(rows, cols, true)
	type scaleBuf struct {
		what   string
		buf    cuda.Buffer
		n      int
		padded bool
	}
	var bufs []scaleBuf
	// operand adds a wanted operand's scale buffers, and clears them for
	// an operand not wanted (the kernel then writes none of it).
	operand := func(what string, data cuda.Buffer, scales, swz *cuda.Buffer, n int, colwise bool) {
		if data.Ptr() == 0 {
			*scales, *swz = cuda.Buffer{}, cuda.Buffer{}
			return
		}
		padded := NVFP4ScalePadded(rows, cols, colwise)
		bufs = append(bufs, scaleBuf{what + " scales", *scales, n, padded}, scaleBuf{what + " swizzled scales", *swz, n, padded})
	}
	operand("rowwise", outRow, &scalesRow, &swzRow, srr*scr, false)
	operand("columnwise", outCol, &scalesCol, &swzCol, src*scc, true)
	for i, b := range bufs {
		if i%2 == 1 && b.buf.Ptr() == 0 {
			continue // no swizzled layout wanted
		}
		if err := need("NVFP4TwoD "+b.what, b.buf, b.n); err != nil {
			return err
		}
		if b.padded || rows == 0 || cols == 0 {
			if err := s.zeroBytes(c, st, b.buf.Slice(0, b.n)); err != nil {
				return fmt.Errorf("kernels: zeroing NVFP4 %s: %w", b.what, err)
			}
		}
	}
	if rows == 0 || cols == 0 {
		return nil
	}
	return s.nvfp4TwoD(c, st, dt, x, rows, cols, amax, outRow, scalesRow, swzRow, outCol, scalesCol, swzCol, scr, scc, cuda.Buffer{}, 0, cuda.Buffer{})
}

// nvfp4TwoD launches the 2D kernel; swzRow and swzCol, when set, receive
// the scales in the GEMM layout. Grouped (offsets set), each 64-row tile
// (16x16 tile off the fast path) quantizes into its group g's tensor:
// amax[g]; the rowwise outputs as in the whole tensor; columnwise codes
// [cols, n_g] at byte cols*o_g/2, scales [roundup(cols,128), n_g/16] at
// roundup(cols,128)*o_g/16 (scc is then unused).
func (s *Set) nvfp4TwoD(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, amax, outRow, scalesRow, swzRow, outCol, scalesCol, swzCol cuda.Buffer, scr, scc int, offsets cuda.Buffer, groups int, flag cuda.Buffer) error {
	fast := nvfp4Tiled(rows, cols) && aligned(16, x, outRow, outCol) && aligned(4, scalesRow, swzRow, scalesCol, swzCol)
	grid := s.grid(int64(ceilDiv(rows, 16))*int64(ceilDiv(cols, 16)), 1)
	kernel := "kq_nvf4_2dg_"
	if fast {
		// One block per 64-row tile of 256 columns (16-bit inputs, from
		// registers) or 128 columns (float32, staged in shared memory),
		// grouped or not: kq_nvf4_2d_one.
		tc := 128
		if dt.Size() == 2 {
			tc = 256
		}
		grid, kernel = cuda.Dim2(ceilDiv(cols, tc), rows/64), "kq_nvf4_2d_"
		// Ungrouped 16-bit inputs writing both operands take the
		// persistent kq_nvf4_2dp_ (the same bytes; NVFP42DEnv).
		if dt.Size() == 2 && offsets.Ptr() == 0 && s.nvfp42DPiped(outRow.Ptr() != 0 && outCol.Ptr() != 0) {
			grid, kernel = s.nvfp42DPipeGrid(rows, cols), "kq_nvf4_2dp_"
		}
	}
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(amax).Ptr(optional(outRow)).Ptr(optional(scalesRow)).I32(int32(scr)).
		Ptr(optional(outCol)).Ptr(optional(scalesCol)).I32(int32(scc)).I32(b2i(fast)).
		Ptr(optional(swzRow)).Ptr(optional(swzCol)).Ptr(optional(offsets)).I32(int32(groups)).Ptr(optional(flag))
	return s.launch(c, kernel+dt.suffix(), grid, cuda.Dim(threads), st)
}

// nvfp42DPipeGrid is kq_nvf4_2dp_'s grid over the 64 x 256 pieces of a
// [rows, cols] input: one block a piece, so that the pieces in progress
// stay one contiguous window of the piece order; its blocks stride over
// several pieces (the next one's loads in flight during the current one's
// work) only under the tests' grid cap (capSlots). The resident blocks
// striding drifted apart over the tensor: against them, both operands of
// the 16x16 recipe (TestBenchmarkUsage, docs/benchmarks.md; fraction of copy at
// 8192^2 / 16384^2) went from 72.3 / 68.0 to 72.7 / 76.5% on an H200 and
// from 76.9 / 69.1 to 82.5 / 82.9% on an H100. The kernel has no fused
// amax, so no state to claim tiles from (kq_sched_claim).
func (s *Set) nvfp42DPipeGrid(rows, cols int) cuda.Dim3 {
	pieces := int64(ceilDiv(cols, 256)) * int64(rows/64)
	return cuda.Dim(int(balancedGrid(pieces, s.capSlots(pieces))))
}

// Swizzle writes the GEMM layout of the row-major [rows, cols] byte scale
// matrix src to dst; with transpose, of its [cols, rows] transpose (MXFP8's
// columnwise scales). The swizzled matrix's rows must be a multiple of 128
// and its columns of 4. One launch.
func (s *Set) Swizzle(c *cuda.Ctx, st cuda.Stream, src cuda.Buffer, rows, cols int, dst cuda.Buffer, transpose bool) error {
	r, k := rows, cols
	if transpose {
		r, k = cols, rows
	}
	if r%128 != 0 || k%4 != 0 {
		return fmt.Errorf("kernels: swizzling a [%d, %d] scale matrix: not padded to [128k, 4k]", r, k)
	}
	if err := need("Swizzle destination", dst, rows*cols); err != nil {
		return err
	}
	s.args.Reset().Buffer(src).I32(int32(rows)).I32(int32(cols)).Buffer(dst).I32(b2i(transpose))
	return s.launch(c, "kq_swizzle", s.grid(int64(rows)*int64(cols), 1), cuda.Dim(threads), st)
}

// NVFP4Dequantize decodes an NVFP4 operand as stored ([rows, cols] codes,
// scale matrix with scols columns, tensor scale from amax) to float32.
func (s *Set) NVFP4Dequantize(c *cuda.Ctx, st cuda.Stream, q cuda.Buffer, rows, cols int, scales cuda.Buffer, scols int, amax, out cuda.Buffer) error {
	s.args.Reset().Buffer(q).I32(int32(rows)).I32(int32(cols)).Buffer(scales).I32(int32(scols)).Buffer(amax).Buffer(out)
	return s.launch(c, "kq_nvf4_dequant", s.grid(int64(rows)*int64(cols), 4), cuda.Dim(threads), st)
}
