// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package kernels

import (
	"fmt"

	"github.com/kquant/kquant/internal/cuda"
)

// The MXFP8 launchers: 1x32 blocks with E8M0 scales, one operand, both in
// one pass, their GEMM (swizzled) layout, and the grouped kernel. The 32x32
// weight tiles are in mx2d.go.

// MXFP8ScaleShape is the padded shape of the E8M0 scale matrix for a
// [rows, cols] tensor (TE's): rowwise [roundup(rows,128),
// roundup(ceil(cols/32),4)], columnwise [roundup(ceil(rows/32),4),
// roundup(cols,128)].
func MXFP8ScaleShape(rows, cols int, colwise bool) (srows, scols int) {
	up := func(a, m int) int { return (a + m - 1) / m * m }
	if colwise {
		return up((rows+31)/32, 4), up(cols, 128)
	}
	return up(rows, 128), up((cols+31)/32, 4)
}

// MXFP8 quantizes a [rows, cols] tensor in 1x32 (rowwise) or 32x1
// (columnwise) blocks: data to out ([rows, cols] either way), E8M0 scales to
// scales (the padded MXFP8ScaleShape, padding written as zero). ocp selects
// the OCP scale rounding instead of TE's. Unless state is the zero Buffer
// (else a zeroed StateBytes state), the tensor's amax (NaN ignored) lands
// in the state's amax word, fused into the same pass. One launch.
func (s *Set) MXFP8(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, out, scales cuda.Buffer, colwise bool, f Format, ocp bool, state cuda.Buffer) error {
	return s.MXFP8Swizzled(c, st, dt, x, rows, cols, out, scales, cuda.Buffer{}, colwise, f, ocp, state)
}

// MXFP8Swizzled is MXFP8 that, unless swz is the zero Buffer, also writes
// every scale byte (padding included) at its GEMM-swizzled position in swz:
// the layout Swizzle writes from the scale matrix (the columnwise matrix
// swizzled as its transpose), so a step needs no Swizzle launch. Same
// kernel, one launch.
func (s *Set) MXFP8Swizzled(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, out, scales, swz cuda.Buffer, colwise bool, f Format, ocp bool, state cuda.Buffer) error {
	srows, scols := MXFP8ScaleShape(rows, cols, colwise)
	if scales.Size() < srows*scols {
		return fmt.Errorf("kernels: MXFP8 scales need %d bytes, have %d", srows*scols, scales.Size())
	}
	if swz.Ptr() != 0 {
		if err := need("MXFP8 swizzled scales", swz, srows*scols); err != nil {
			return err
		}
	}
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(out).Buffer(scales).
		I32(int32(srows)).I32(int32(scols)).I32(int32(f)).I32(b2i(ocp)).Ptr(optional(state)).Ptr(optional(swz))
	tasks := int64(srows) * int64(scols)
	// The vectorised kernels need whole 8-element groups per row and
	// aligned 16-byte loads and 8-byte stores.
	vec := cols%8 == 0 && x.Ptr()%16 == 0 && out.Ptr()%8 == 0 && scales.Ptr()%8 == 0
	// The 128x128 macro-tile kernels (16-bit inputs; mxfp8Macro) store
	// scales in whole words: 16-byte aligned columnwise and swizzled
	// matrices, 4-byte aligned rowwise ones.
	macro := vec && dt != F32 && x.Ptr()%16 == 0 && out.Ptr()%16 == 0 && aligned(16, swz) &&
		(colwise && aligned(16, scales) || !colwise && aligned(4, scales))
	switch {
	case colwise && macro:
		// The fused kernel's columnwise-only twin.
		name := "kq_mxfp8_colw_" + dt.suffix()
		return s.launch(c, name, s.mxfp8Macro(c, name, srows, scols), cuda.Dim(threads), st)
	case macro:
		// The rowwise streaming kernel (kq_mxfp8_rowb): tiles of 4 rows x
		// mxfp8RowbCols columns of the padded scale matrix's element space,
		// the resident blocks striding over them.
		name := "kq_mxfp8_rowb_" + dt.suffix()
		return s.launch(c, name, s.mxfp8RowbGrid(c, name, srows, scols), cuda.Dim(threads), st)
	case colwise && vec:
		// 32x256 tiles through shared memory, blocks striding over them.
		tiles := int64(srows) * int64((scols+255)/256)
		return s.launch(c, "kq_mxfp8_colt_"+dt.suffix(), s.grid(tiles*threads, 1), cuda.Dim(threads), st)
	case colwise:
		return s.launch(c, "kq_mxfp8_col_"+dt.suffix(), s.grid(tasks, 1), cuda.Dim(threads), st)
	case vec:
		// One warp per chunk of 32 x KQ_UNROLL 8-element groups of a
		// padded row, at most the resident blocks.
		chunks := int64(srows) * int64((4*scols+rowChunk-1)/rowChunk)
		blocks := min((chunks+threads/32-1)/(threads/32), int64(s.sms*residentPerSM))
		return s.launch(c, "kq_mxfp8_row8_"+dt.suffix(), cuda.Dim(int(max(blocks, 1))), cuda.Dim(threads), st)
	}
	// One warp per 1x32 block.
	return s.launch(c, "kq_mxfp8_row_"+dt.suffix(), s.grid(tasks*32, 1), cuda.Dim(threads), st)
}

// mxfp8RowbCols is the columns of a kq_mxfp8_rowb block (KQ_MXB_COLS; its
// rows are KQ_MXB_ROWS, 4).
const mxfp8RowbCols = 2048

// mxfp8RowbGrid is kernel name's (kq_mxfp8_rowb_'s) grid for the rowwise
// scale shape [srows, scols]: its tiles of 4 rows x mxfp8RowbCols columns
// ([row quads, column blocks]) over the blocks that fit at once
// (waveSlots: the driver's occupancy, 4 a SM at the 64 registers of its
// __launch_bounds__(256, 4)), balanced, so that the fused amax commits
// once a block. The occupancy, not a constant here, sets the grid, so a
// change of the launch bound alone resizes it.
func (s *Set) mxfp8RowbGrid(c *cuda.Ctx, name string, srows, scols int) cuda.Dim3 {
	tiles := int64(srows/4) * int64(ceilDiv(scols, mxfp8RowbCols/32))
	return s.balancedWave(c, name, tiles)
}

// MXFP8BothFits reports whether MXFP8Both handles a [rows, cols] tensor of
// dt in these buffers: 16-bit inputs (the fused kernel holds its tile in
// registers as pairs), whole 8-element runs along each row (cols % 8 == 0)
// with a 16-byte aligned input (16-byte loads) and outputs (8-byte stores;
// 16-byte alignment is kept so that the kernel may widen them), a 16-byte
// aligned columnwise and 4-byte aligned rowwise scale matrix (the macro
// tiles' word stores; the swizzled ones, when given, 16-byte aligned).
// Device allocations are 256-byte aligned, so in practice it is the type
// and cols % 8.
func MXFP8BothFits(dt DType, rows, cols int, x, outRow, scRow, outCol, scCol cuda.Buffer) bool {
	return (dt == BF16 || dt == F16) && rows > 0 && cols > 0 && cols%8 == 0 &&
		aligned(16, x, outRow, outCol, scCol) && aligned(4, scRow)
}

// mxfp8Macro is the grid of MXFP8 macro-tile kernel name (kq_mxfp8_both_,
// kq_mxfp8_colw_) for the columnwise scale shape [srowsCol, scolsCol]:
// one block per 128x128 macro tile (srowsCol/4 x scolsCol/128 of them),
// at most the blocks that fit at once (waveSlots: 2 a SM at their 128
// registers), striding over the tiles, so that the fused amax commits
// once per resident block. The blocks are balanced (balancedGrid): a last
// round of tiles for only part of the blocks (8192^2: 4096 tiles on 264
// blocks, the last round for 136 of them) would leave half the SMs' loads
// idle at the end. (The variants without the prefetch, 3 blocks per SM,
// the 64x64 cast+transpose and a 64-register rework at 4 blocks per SM
// were measured against these on an H200, docs/benchmarks.md, and
// dropped.)
func (s *Set) mxfp8Macro(c *cuda.Ctx, name string, srowsCol, scolsCol int) cuda.Dim3 {
	macros := int64(srowsCol/4) * int64(scolsCol/128)
	return s.balancedWave(c, name, macros)
}

// MXFP8Both quantizes a [rows, cols] tensor into both MXFP8 operands in one
// pass over the input: rowwise (1x32) data and scales to outRow and scRow,
// columnwise (32x1) to outCol and scCol, shapes and bytes as two MXFP8 calls
// (padding included), and, unless state is the zero Buffer, the tensor's
// amax into the state as MXFP8 does. The input is read once instead of
// twice. Only for what MXFP8BothFits accepts; otherwise call MXFP8 twice.
// One launch.
func (s *Set) MXFP8Both(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, outRow, scRow, outCol, scCol cuda.Buffer, f Format, ocp bool, state cuda.Buffer) error {
	return s.MXFP8BothSwizzled(c, st, dt, x, rows, cols, outRow, scRow, cuda.Buffer{}, outCol, scCol, cuda.Buffer{}, f, ocp, state)
}

// MXFP8BothSwizzled is MXFP8Both that also writes each operand's scales in
// the GEMM swizzled layout (as MXFP8Swizzled) to swzRow and swzCol, each
// unless the zero Buffer: both operands and their GEMM scales in one
// launch instead of three.
func (s *Set) MXFP8BothSwizzled(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, outRow, scRow, swzRow, outCol, scCol, swzCol cuda.Buffer, f Format, ocp bool, state cuda.Buffer) error {
	if !MXFP8BothFits(dt, rows, cols, x, outRow, scRow, outCol, scCol) {
		return fmt.Errorf("kernels: MXFP8Both does not handle [%d, %d] %v with these buffers", rows, cols, dt)
	}
	rr, rc := MXFP8ScaleShape(rows, cols, false)
	cr, cc := MXFP8ScaleShape(rows, cols, true)
	// The kernel's 32x64 tiles span both padded scale matrices, which
	// cover the same roundup(rows,128) x roundup(cols,128) elements.
	if rr != 32*cr || 32*rc != cc || cc%64 != 0 {
		return fmt.Errorf("kernels: MXFP8Both: scale shapes [%d, %d] and [%d, %d] do not tile", rr, rc, cr, cc)
	}
	for _, b := range []struct {
		what string
		buf  cuda.Buffer
		n    int
	}{{"the input", x, rows * cols * dt.Size()}, {"rowwise data", outRow, rows * cols}, {"colwise data", outCol, rows * cols}, {"rowwise scales", scRow, rr * rc}, {"colwise scales", scCol, cr * cc}} {
		if err := need("MXFP8Both "+b.what, b.buf, b.n); err != nil {
			return err
		}
	}
	if swzRow.Ptr() != 0 {
		if err := need("MXFP8Both rowwise swizzled scales", swzRow, rr*rc); err != nil {
			return err
		}
	}
	if swzCol.Ptr() != 0 {
		if err := need("MXFP8Both colwise swizzled scales", swzCol, cr*cc); err != nil {
			return err
		}
	}
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(outRow).Buffer(scRow).I32(int32(rc)).
		Buffer(outCol).Buffer(scCol).I32(int32(cr)).I32(int32(cc)).I32(int32(f)).I32(b2i(ocp)).Ptr(optional(state)).
		Ptr(optional(swzRow)).Ptr(optional(swzCol))
	if !aligned(16, swzRow, swzCol) {
		return fmt.Errorf("kernels: MXFP8Both: swizzled scales must be 16-byte aligned")
	}
	// One block per 128x128 macro tile (a warp per 32x64 piece), blocks
	// striding over them; at most the blocks that fit at once.
	name := "kq_mxfp8_both_" + dt.suffix()
	return s.launch(c, name, s.mxfp8Macro(c, name, cr, cc), cuda.Dim(threads), st)
}

// MXFP8Dequantize writes decode(q) * 2^(e-127) to out as float32.
func (s *Set) MXFP8Dequantize(c *cuda.Ctx, st cuda.Stream, q cuda.Buffer, rows, cols int, scales cuda.Buffer, colwise bool, out cuda.Buffer, f Format) error {
	_, scols := MXFP8ScaleShape(rows, cols, colwise)
	s.args.Reset().Buffer(q).I32(int32(rows)).I32(int32(cols)).Buffer(scales).I32(int32(scols)).I32(b2i(colwise)).Buffer(out).I32(int32(f))
	return s.launch(c, "kq_mxfp8_dequant", s.grid(int64(rows)*int64(cols), 4), cuda.Dim(threads), st)
}

// GroupedMXFP8Out is one MXFP8 operand of a grouped quantize: Data
// (rows*cols bytes, the input's layout for both operands), Scales (the
// groups' padded E8M0 matrices concatenated) and, unless the zero Buffer,
// Swizzled (the same matrices in the GEMM layout, concatenated).
type GroupedMXFP8Out struct {
	Data, Scales, Swizzled cuda.Buffer
}

// GroupedMXFP8ScaleRows bounds the rows of the concatenated padded rowwise
// scale matrices of a grouped MXFP8 quantize, sum of roundup(n_g, 128): a
// group of 32-row multiples pads at most 96 rows, and at most rows/32
// groups are nonempty. The columnwise matrices take a 32nd of it.
func GroupedMXFP8ScaleRows(rows, groups int) int {
	return rows + 96*min(groups, rows/32)
}

// GroupedMXFP8 is the grouped MXFP8BlockScaling quantize (1x32 rowwise,
// 32x1 columnwise; groups of 32-row multiples). The data of either operand
// is the ungrouped data (the input's [rows, cols] layout, group g at
// cols*o_g). Group g's rowwise scales, [roundup(n_g,128),
// roundup(ceil(cols/32),4)], start at row P_g of row.Scales, and its
// columnwise scales, [roundup(n_g/32,4), roundup(cols,128)], at row P_g/32
// of col.Scales, where P_g = sum over h < g of roundup(n_h, 128): the
// reference's per-group matrices (padding zero) concatenated, and so are
// the swizzled ones (written directly when Swizzled is given). Buffers:
// row.Scales and row.Swizzled GroupedMXFP8ScaleRows(rows, groups) *
// roundup(ceil(cols/32),4) bytes, col.Scales and col.Swizzled
// GroupedMXFP8ScaleRows/32 * roundup(cols,128); tiles 4*(groups+1) bytes
// of scratch (the per-group P_g/128). An operand whose Data is the zero
// Buffer is skipped (not both). ws needs Offsets and Flag; with Amax
// (4*groups bytes) it also receives each group's amax (the reference's
// Result.Amax). Three launches whatever the group count: offsets, the
// padded prefix sum, one pass over the input for both operands (16-bit
// inputs with cols % 8 == 0 and aligned buffers take the register-tile
// kernel kq_grp_mx2, others the general kq_grp_mx; same bytes).
func (s *Set) GroupedMXFP8(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, splits cuda.Buffer, groups int,
	ws GroupWorkspace, tiles cuda.Buffer, row, col GroupedMXFP8Out, f Format, ocp bool) error {
	doRow, doCol := row.Data.Ptr() != 0, col.Data.Ptr() != 0
	if !doRow && !doCol {
		return fmt.Errorf("kernels: GroupedMXFP8 without an output operand")
	}
	maxRows, scolsRow, scolsCol, err := s.groupedMXFP8Prologue(c, st, "GroupedMXFP8", dt, x, rows, cols, splits, groups, ws, tiles, row, col)
	if err != nil {
		return err
	}
	ops := int32(0)
	if doRow {
		ops |= 1
	}
	if doCol {
		ops |= 2
	}
	vec := cols%8 == 0 && x.Ptr()%16 == 0 && row.Data.Ptr()%8 == 0 && col.Data.Ptr()%8 == 0
	maxTiles := int64(maxRows/32) * int64(scolsCol/64)
	if vec && dt != F32 && aligned(2, row.Scales, col.Scales) {
		// 16-bit inputs: kq_mxfp8_both's register tiles (raw input
		// pairs, paired-max amaxes, the column reduce-scatter), one warp
		// per tile, at most the blocks that fit at once
		// (__launch_bounds__(256, 3)).
		s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(ws.Offsets).Buffer(tiles).I32(int32(groups)).Buffer(ws.Flag).
			Ptr(optional(row.Data)).Ptr(optional(row.Scales)).Ptr(optional(row.Swizzled)).I32(int32(scolsRow)).
			Ptr(optional(col.Data)).Ptr(optional(col.Scales)).Ptr(optional(col.Swizzled)).I32(int32(scolsCol)).
			I32(int32(f)).I32(b2i(ocp)).Ptr(optional(ws.Amax)).I32(ops)
		return s.launch(c, "kq_grp_mx2_"+dt.suffix(), s.warpGrid(maxTiles, 3), cuda.Dim(threads), st)
	}
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(ws.Offsets).Buffer(tiles).I32(int32(groups)).Buffer(ws.Flag).
		Ptr(optional(row.Data)).Ptr(optional(row.Scales)).Ptr(optional(row.Swizzled)).I32(int32(scolsRow)).
		Ptr(optional(col.Data)).Ptr(optional(col.Scales)).Ptr(optional(col.Swizzled)).I32(int32(scolsCol)).
		I32(int32(f)).I32(b2i(ocp)).Ptr(optional(ws.Amax)).I32(b2i(vec)).I32(ops)
	// One warp per 32x64 tile of the padded row space, at most the blocks
	// that fit at once (__launch_bounds__(256, 2)).
	return s.launch(c, "kq_grp_mx_"+dt.suffix(), s.warpGrid(maxTiles, 2), cuda.Dim(threads), st)
}

// groupedMXFP8Prologue is what the grouped MXFP8 launchers (1D and 32x32
// tiles, the same buffers and layout) do before their quantize kernel:
// check the buffers of the operands they write (Data set; the swizzled
// scales optional), then launch the offsets (zeroing ws.Amax when given)
// and the padded prefix sum into tiles. It returns the bound on the
// concatenated rowwise scale rows and the two scale matrices' columns.
func (s *Set) groupedMXFP8Prologue(c *cuda.Ctx, st cuda.Stream, op string, dt DType, x cuda.Buffer, rows, cols int, splits cuda.Buffer,
	groups int, ws GroupWorkspace, tiles cuda.Buffer, row, col GroupedMXFP8Out) (maxRows, scolsRow, scolsCol int, err error) {
	maxRows = GroupedMXFP8ScaleRows(rows, groups)
	scolsRow = roundUp(ceilDiv(cols, 32), 4)
	scolsCol = roundUp(cols, 128)
	checks := []bufNeed{{"input", x, rows * cols * dt.Size(), false}, {"tiles", tiles, 4 * (groups + 1), false}}
	if row.Data.Ptr() != 0 {
		checks = append(checks, bufNeed{"rowwise data", row.Data, rows * cols, false}, bufNeed{"rowwise scales", row.Scales, maxRows * scolsRow, false},
			bufNeed{"rowwise swizzled scales", row.Swizzled, maxRows * scolsRow, true})
	}
	if col.Data.Ptr() != 0 {
		checks = append(checks, bufNeed{"columnwise data", col.Data, rows * cols, false},
			bufNeed{"columnwise scales", col.Scales, maxRows / 32 * scolsCol, false},
			bufNeed{"columnwise swizzled scales", col.Swizzled, maxRows / 32 * scolsCol, true})
	}
	nzero := 0
	if ws.Amax.Ptr() != 0 {
		checks = append(checks, bufNeed{"group amaxes", ws.Amax, 4 * groups, false})
		nzero = groups
	}
	if err := needAll(op, checks...); err != nil {
		return 0, 0, 0, err
	}
	if err := s.GroupOffsets(c, st, splits, groups, rows, GroupedMXFP8Align, ws, nzero); err != nil {
		return 0, 0, 0, err
	}
	s.args.Reset().Buffer(ws.Offsets).I32(int32(groups)).Buffer(tiles)
	if err := s.launch(c, "kq_grp_tiles", cuda.Dim(1), cuda.Dim(1024), st); err != nil {
		return 0, 0, 0, err
	}
	return maxRows, scolsRow, scolsCol, nil
}
