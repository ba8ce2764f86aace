// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package kernels

import (
	"fmt"

	"github.com/kquant/kquant/internal/cuda"
)

// Fast-path flags of kq_mx2d (KQ2_VEC_* in mx2d.cu), each set only when
// every access it covers is aligned.
const (
	mx2dVecData   = 1 // cols % 8 == 0, x 16-byte and data 8-byte aligned: 16-byte loads, 8-byte code stores
	mx2dVecScales = 2 // scale buffers 16-byte aligned: 4- and 16-byte scale stores
)

// MXFP82D quantizes a [rows, cols] tensor with MXFP8BlockScaling's 32x32
// two-dimensional weight tiles (the reference's quantizeMXFP82D): one E8M0
// exponent per tile, from the tile's amax (NaN ignored) with TE's rounding
// or, with ocp, OCP's, shared by both operands. Each operand whose data
// buffer is not the zero Buffer is written:
//
//   - outRow / outCol: the codes, rows*cols bytes in the input's layout
//     (the same bytes for both operands: MXFP8's columnwise data is not
//     transposed);
//   - scRow: the rowwise E8M0 matrix, MXFP8ScaleShape(rows, cols, false)
//     = [roundup(rows,128), roundup(ceil(cols/32),4)], entry (r, kb) the
//     exponent of tile (r/32, kb); scCol: the columnwise one,
//     MXFP8ScaleShape(rows, cols, true) = [roundup(ceil(rows/32),4),
//     roundup(cols,128)], entry (rb, c) the exponent of tile (rb, c/32);
//     padding zero (every byte written);
//   - swzRow / swzCol, unless the zero Buffer: the same matrices in the
//     GEMM swizzled layout (the columnwise one swizzled as its transpose),
//     as MXFP8Swizzled writes them, so that a step needs no Swizzle launch.
//
// Unless state is the zero Buffer (else a StateBytes state, zeroed once
// when allocated), the tensor's amax (NaN ignored) lands in the state's
// amax word, fused into the same pass. f is E4M3 or E5M2. Any shape: cols
// % 8 == 0 with a 16-byte aligned input and 8-byte aligned data buffers
// takes 16-byte loads and 8-byte stores, other shapes element accesses;
// 16-byte aligned scale buffers take 4- and 16-byte scale stores, others
// byte stores (same bytes). A block of 8 warps quantizes a 128x128 macro
// tile (one 512-byte block of each swizzled matrix) per step, the blocks
// that fit at once striding over them. One launch; the input is read once
// for both operands.
func (s *Set) MXFP82D(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, outRow, scRow, swzRow, outCol, scCol, swzCol cuda.Buffer, f Format, ocp bool, state cuda.Buffer) error {
	doRow, doCol := outRow.Ptr() != 0, outCol.Ptr() != 0
	if !doRow && !doCol {
		return fmt.Errorf("kernels: MXFP82D without an output operand")
	}
	if rows <= 0 || cols <= 0 {
		return fmt.Errorf("kernels: MXFP82D of an empty [%d, %d] tensor", rows, cols)
	}
	rr, rc := MXFP8ScaleShape(rows, cols, false)
	cr, cc := MXFP8ScaleShape(rows, cols, true)
	// The kernel's 32x64 pieces cover both padded scale matrices, which
	// span the same roundup(rows,128) x roundup(cols,128) elements.
	if rr != 32*cr || 32*rc != cc || cc%64 != 0 {
		return fmt.Errorf("kernels: MXFP82D: scale shapes [%d, %d] and [%d, %d] do not tile", rr, rc, cr, cc)
	}
	checks := []bufNeed{{"input", x, rows * cols * dt.Size(), false}}
	if doRow {
		checks = append(checks, bufNeed{"rowwise data", outRow, rows * cols, false}, bufNeed{"rowwise scales", scRow, rr * rc, false},
			bufNeed{"rowwise swizzled scales", swzRow, rr * rc, true})
	}
	if doCol {
		checks = append(checks, bufNeed{"columnwise data", outCol, rows * cols, false}, bufNeed{"columnwise scales", scCol, cr * cc, false},
			bufNeed{"columnwise swizzled scales", swzCol, cr * cc, true})
	}
	if state.Ptr() != 0 {
		checks = append(checks, bufNeed{"state", state, StateBytes, false})
	}
	if err := needAll("MXFP82D", checks...); err != nil {
		return err
	}
	if !doRow {
		scRow, swzRow = cuda.Buffer{}, cuda.Buffer{}
	}
	if !doCol {
		scCol, swzCol = cuda.Buffer{}, cuda.Buffer{}
	}
	var vec int32
	if cols%8 == 0 && aligned(16, x) && aligned(8, outRow, outCol) {
		vec |= mx2dVecData
	}
	if aligned(16, scRow, swzRow, scCol, swzCol) {
		vec |= mx2dVecScales
	}
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).
		Ptr(optional(outRow)).Ptr(optional(scRow)).Ptr(optional(swzRow)).I32(int32(rc)).
		Ptr(optional(outCol)).Ptr(optional(scCol)).Ptr(optional(swzCol)).I32(int32(cr)).I32(int32(cc)).
		I32(int32(f)).I32(b2i(ocp)).Ptr(optional(state)).I32(vec)
	// The resident blocks (tileGrid: 2 a SM at kq_mx2d's
	// __launch_bounds__(256, 2), over 100 registers) over the 128x128
	// macro tiles (a warp per 32x64 piece), taken in kq_sched_claim's
	// order, so that the fused amax commits once per resident block.
	name := "kq_mx2d_" + dt.suffix()
	return s.launch(c, name, s.tileGrid(c, name, cc/128, cr/4), cuda.Dim(threads), st)
}

// GroupedMXFP82D is the grouped (MoE) MXFP8BlockScaling quantize with
// 32x32 two-dimensional weight tiles: x [rows, cols] split along its rows
// by the device split sizes (int32, splits; groups of
// GroupedMXFP8Align = 32-row multiples, so that no tile straddles a
// group), each group quantized as MXFP82D quantizes a tensor of its own,
// the results concatenated as the reference's QuantizeGrouped gives them,
// in GroupedMXFP8's layout: either operand's Data is the ungrouped data
// (rows*cols bytes, the input's layout, group g at cols*o_g); group g's
// rowwise scales [roundup(n_g,128), roundup(ceil(cols/32),4)] start at row
// P_g of row.Scales and its columnwise scales [roundup(n_g/32,4),
// roundup(cols,128)] at row P_g/32 of col.Scales, P_g = sum over h < g of
// roundup(n_h, 128), padding zero; Swizzled (unless the zero Buffer) the
// groups' GEMM-swizzled matrices (the columnwise ones as their
// transposes), concatenated likewise. Buffer sizes as GroupedMXFP8's:
// row.Scales and row.Swizzled GroupedMXFP8ScaleRows(rows, groups) *
// roundup(ceil(cols/32),4) bytes, col.Scales and col.Swizzled
// GroupedMXFP8ScaleRows/32 * roundup(cols,128); tiles 4*(groups+1) bytes
// of scratch (the per-group P_g/128). An operand whose Data is the zero
// Buffer is skipped (not both). ws needs Offsets and Flag; with Amax
// (4*groups bytes) it also receives each group's amax (NaN ignored, the
// reference's Result.Amax). A misaligned group, or sizes that do not add
// up to rows, sets ws.Flag and the quantize writes nothing (GroupError
// names the group). Three launches whatever the group count, none shaped
// by the split sizes (graph-safe): offsets (kq_grp_offsets), the padded
// prefix sum (kq_grp_tiles) and kq_grp_mx2d, MXFP82D's tile code over the
// 128x128 macro tiles of the padded row space (each block finds a macro
// row's group from the device prefix), the blocks that fit at once
// striding over them.
func (s *Set) GroupedMXFP82D(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, splits cuda.Buffer, groups int,
	ws GroupWorkspace, tiles cuda.Buffer, row, col GroupedMXFP8Out, f Format, ocp bool) error {
	doRow, doCol := row.Data.Ptr() != 0, col.Data.Ptr() != 0
	if !doRow && !doCol {
		return fmt.Errorf("kernels: GroupedMXFP82D without an output operand")
	}
	if rows <= 0 || cols <= 0 {
		return fmt.Errorf("kernels: GroupedMXFP82D of an empty [%d, %d] tensor", rows, cols)
	}
	if !doRow {
		row = GroupedMXFP8Out{}
	}
	if !doCol {
		col = GroupedMXFP8Out{}
	}
	maxRows, scolsRow, scolsCol, err := s.groupedMXFP8Prologue(c, st, "GroupedMXFP82D", dt, x, rows, cols, splits, groups, ws, tiles, row, col)
	if err != nil {
		return err
	}
	// Group rows start at 32-row multiples of the input, so the data
	// flags are MXFP82D's.
	var vec int32
	if cols%8 == 0 && aligned(16, x) && aligned(8, row.Data, col.Data) {
		vec |= mx2dVecData
	}
	if aligned(16, row.Scales, row.Swizzled, col.Scales, col.Swizzled) {
		vec |= mx2dVecScales
	}
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(ws.Offsets).Buffer(tiles).I32(int32(groups)).Buffer(ws.Flag).
		Ptr(optional(row.Data)).Ptr(optional(row.Scales)).Ptr(optional(row.Swizzled)).I32(int32(scolsRow)).
		Ptr(optional(col.Data)).Ptr(optional(col.Scales)).Ptr(optional(col.Swizzled)).I32(int32(scolsCol)).
		I32(int32(f)).I32(b2i(ocp)).Ptr(optional(ws.Amax)).I32(vec)
	// At most the macro tiles of the most padded split vector, at most
	// the blocks that fit at once (tileGrid; __launch_bounds__(256, 2)).
	name := "kq_grp_mx2d_" + dt.suffix()
	return s.launch(c, name, s.tileGrid(c, name, scolsCol/128, ceilDiv(maxRows, 128)), cuda.Dim(threads), st)
}
