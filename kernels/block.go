// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package kernels

import (
	"fmt"

	"github.com/kquant/kquant/internal/cuda"
)

// BlockScaleShape is TE's padded float32 scale shape of a Float8BlockScaling
// operand of a [rows, cols] input (contract table): 1x128 rowwise
// [ceil(cols/128), roundup(rows,4)], columnwise [ceil(rows/128),
// roundup(cols,4)]; 128x128 rowwise [ceil(rows/128),
// roundup(ceil(cols/128),4)], columnwise [ceil(cols/128),
// roundup(ceil(rows/128),4)].
func BlockScaleShape(rows, cols int, tile2D, colwise bool) (srows, scols int) {
	switch {
	case !tile2D && !colwise:
		return ceilDiv(cols, 128), roundUp(rows, 4)
	case !tile2D:
		return ceilDiv(rows, 128), roundUp(cols, 4)
	case !colwise:
		return ceilDiv(rows, 128), roundUp(ceilDiv(cols, 128), 4)
	default:
		return ceilDiv(cols, 128), roundUp(ceilDiv(rows, 128), 4)
	}
}

// BlockOpts are the Float8BlockScaling scale options.
type BlockOpts struct {
	Format Format
	Eps    float32
	Pow2   bool
}

// BlockRow quantizes a [rows, cols] tensor in 1x128 blocks: data to out
// ([rows, cols]), 1/scale to sinv (BlockScaleShape, padding zeroed by the
// kernel). One launch.
func (s *Set) BlockRow(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, out, sinv cuda.Buffer, o BlockOpts) error {
	sr, sc := BlockScaleShape(rows, cols, false, false)
	if err := need("BlockRow scales", sinv, 4*sr*sc); err != nil {
		return err
	}
	return s.blockRow(c, st, dt, x, rows, cols, out, sinv, sc, o, cuda.Buffer{}, 0, cuda.Buffer{})
}

// Rowwise kernel block shape: KQ_ROW_ROWS x KQ_ROW_COLS in block.cu.
const (
	blockRowRows = 4
	blockRowCols = 2048
)

// Fast-path flags of the block kernels (KQ_VEC_* in block.cu): each is set
// only when every access it covers is aligned, so the kernels need no
// per-access address checks.
const (
	blockVecLoad     = 1 // cols % 8 == 0, x 16-byte aligned: 8-element loads
	blockVecColStore = 2 // rows % 8 == 0, columnwise data 8-byte aligned
	blockVecRowStore = 4 // cols % 8 == 0, rowwise data 8-byte aligned
)

// blockVec returns the fast-path flags for x and the outputs that are
// present (zero Buffers have address 0, which is aligned).
func blockVec(rows, cols int, x, outRow, outCol cuda.Buffer) int32 {
	var v int32
	if cols%8 == 0 && aligned(16, x) {
		v |= blockVecLoad
	}
	if rows%8 == 0 && aligned(8, outCol) {
		v |= blockVecColStore
	}
	if cols%8 == 0 && aligned(8, outRow) {
		v |= blockVecRowStore
	}
	return v
}

func (s *Set) blockRow(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, out, sinv cuda.Buffer, scols int, o BlockOpts, offsets cuda.Buffer, groups int, flag cuda.Buffer) error {
	if rows == 0 || cols == 0 {
		return nil
	}
	blocks := int64(ceilDiv(rows, blockRowRows)) * int64(ceilDiv(cols, blockRowCols))
	if blocks > 1<<31-1 {
		return fmt.Errorf("kernels: BlockRow of %dx%d: too many blocks", rows, cols)
	}
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(out).Buffer(sinv).I32(int32(scols)).
		I32(int32(o.Format)).F32(o.Eps).I32(b2i(o.Pow2)).I32(blockVec(rows, cols, x, out, cuda.Buffer{})).
		Ptr(optional(offsets)).I32(int32(groups)).Ptr(optional(flag))
	return s.launch(c, "kq_blk_row_"+dt.suffix(), cuda.Dim(int(blocks)), cuda.Dim(threads), st)
}

// BlockCol quantizes the columnwise operand in 128x1 blocks: data
// transposed to out ([cols, rows]), 1/scale to sinv (BlockScaleShape).
// One launch.
func (s *Set) BlockCol(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, out, sinv cuda.Buffer, o BlockOpts) error {
	sr, sc := BlockScaleShape(rows, cols, false, true)
	if err := need("BlockCol scales", sinv, 4*sr*sc); err != nil {
		return err
	}
	return s.blockTile(c, st, dt, x, rows, cols, cuda.Buffer{}, cuda.Buffer{}, 0, out, sinv, sc, o, cuda.Buffer{}, 0, cuda.Buffer{})
}

// BlockRowCol quantizes both 1x128 operands in one pass over x (one
// launch, the input read once): the rowwise data to outRow ([rows, cols])
// with sinvRow, and the columnwise 128x1 data transposed to outCol ([cols,
// rows]) with sinvCol, each scale matrix in its BlockScaleShape. The bytes
// equal BlockRow's and BlockCol's.
func (s *Set) BlockRowCol(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, outRow, sinvRow, outCol, sinvCol cuda.Buffer, o BlockOpts) error {
	rsr, rsc := BlockScaleShape(rows, cols, false, false)
	if err := need("BlockRowCol rowwise scales", sinvRow, 4*rsr*rsc); err != nil {
		return err
	}
	csr, csc := BlockScaleShape(rows, cols, false, true)
	if err := need("BlockRowCol columnwise scales", sinvCol, 4*csr*csc); err != nil {
		return err
	}
	return s.blockTile(c, st, dt, x, rows, cols, outRow, sinvRow, rsc, outCol, sinvCol, csc, o, cuda.Buffer{}, 0, cuda.Buffer{})
}

// blockTile launches the 128x128-tile kernel for the 1x128 rowwise and/or
// 128x1 columnwise operands (an absent one passed as zero Buffers).
func (s *Set) blockTile(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, outRow, sinvRow cuda.Buffer, scolsRow int, outCol, sinvCol cuda.Buffer, scolsCol int, o BlockOpts, offsets cuda.Buffer, groups int, flag cuda.Buffer) error {
	return s.blockLaunch(c, st, "kq_blk_col_", "block quantize", dt, x, rows, cols, outRow, sinvRow, scolsRow, outCol, sinvCol, scolsCol, o, offsets, groups, flag)
}

// blockLaunch launches kernel (kq_blk_col_, kq_blk_2d_ or kq_blk_2dg_, the input type's
// suffix appended) over the input's 128x128 tiles; what names it in an
// error.
func (s *Set) blockLaunch(c *cuda.Ctx, st cuda.Stream, kernel, what string, dt DType, x cuda.Buffer, rows, cols int, outRow, sinvRow cuda.Buffer, scolsRow int, outCol, sinvCol cuda.Buffer, scolsCol int, o BlockOpts, offsets cuda.Buffer, groups int, flag cuda.Buffer) error {
	if rows == 0 || cols == 0 {
		return nil
	}
	if ceilDiv(rows, 128) > 65535 {
		return fmt.Errorf("kernels: %s of %d rows: too many", what, rows)
	}
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Ptr(optional(outRow)).Ptr(optional(sinvRow)).I32(int32(scolsRow)).
		Ptr(optional(outCol)).Ptr(optional(sinvCol)).I32(int32(scolsCol)).I32(int32(o.Format)).F32(o.Eps).I32(b2i(o.Pow2)).
		I32(blockVec(rows, cols, x, outRow, outCol)).Ptr(optional(offsets)).I32(int32(groups)).Ptr(optional(flag))
	return s.launch(c, kernel+dt.suffix(), cuda.Dim2(ceilDiv(cols, 128), ceilDiv(rows, 128)), cuda.Dim(threads), st)
}

// Block2D quantizes in 128x128 tiles: rowwise data to outRow and
// transposed data to outCol with their scale matrices (either pair may be
// zero Buffers). One launch; the input is read once.
func (s *Set) Block2D(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, outRow, sinvRow, outCol, sinvCol cuda.Buffer, o BlockOpts) error {
	_, scc := BlockScaleShape(rows, cols, true, true)
	return s.block2D(c, st, dt, x, rows, cols, outRow, sinvRow, outCol, sinvCol, scc, o, cuda.Buffer{}, 0, cuda.Buffer{})
}

// block2D launches kq_blk_2d, or grouped (offsets given) kq_blk_2dg (the
// same body with the group lookups, at fewer blocks per SM: it needs more
// registers); scolsCol is the columnwise scale matrix's row length
// (ungrouped) or GroupedBlock2DColScaleCols (grouped).
func (s *Set) block2D(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, outRow, sinvRow, outCol, sinvCol cuda.Buffer, scolsCol int, o BlockOpts, offsets cuda.Buffer, groups int, flag cuda.Buffer) error {
	_, scr := BlockScaleShape(rows, cols, true, false)
	kernel := "kq_blk_2d_"
	if offsets.Ptr() != 0 {
		kernel = "kq_blk_2dg_"
	}
	return s.blockLaunch(c, st, kernel, "Block2D", dt, x, rows, cols, outRow, sinvRow, scr, outCol, sinvCol, scolsCol, o, offsets, groups, flag)
}

// GroupedBlock2DColScaleCols is the capacity, in padded tile rows, that
// GroupedBlock2D's columnwise scales need for any split vector of groups
// 128-row multiples adding up to rows: sum over g of roundup(n_g/128, 4)
// is at most rows/128 + 3*min(groups, rows/128). The buffer holds
// 4*ceil(cols/128) times that many bytes.
func GroupedBlock2DColScaleCols(rows, groups int) int {
	u := rows / 128
	return u + 3*min(groups, u)
}

// GroupedBlock2D is the grouped (MoE) Float8BlockScaling 128x128 (weights)
// quantize of x [rows, cols] split along its rows by the device split
// sizes (each a multiple of 128 rows, else ws.Flag names the group and
// nothing is written); every 128x128 tile lies in one group, and each
// group is quantized as a tensor of its own, the results concatenated:
// rowwise data [n_g, cols] in place, rowwise scales [n_g/128,
// roundup(ceil(cols/128),4)] per group, which concatenate to the
// ungrouped [rows/128, roundup(ceil(cols/128),4)] matrix (sinvRow holds
// that); transposed data [cols, n_g] at outCol + cols*o_g; columnwise
// scales [ceil(cols/128), roundup(n_g/128,4)] at float offset
// ceil(cols/128) * sum_{h<g} roundup(n_h/128,4), padding zero, in sinvCol
// of 4*ceil(cols/128)*GroupedBlock2DColScaleCols(rows, groups) bytes (the
// tail past the last group zeroed by every run). Either operand's pair may
// be zero Buffers. Two launches whatever the group count: offsets,
// quantize.
func (s *Set) GroupedBlock2D(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, splits cuda.Buffer, groups int, ws GroupWorkspace, outRow, sinvRow, outCol, sinvCol cuda.Buffer, o BlockOpts) error {
	if err := s.GroupOffsets(c, st, splits, groups, rows, 128, ws, 0); err != nil {
		return err
	}
	if outRow.Ptr() != 0 {
		sr, sc := BlockScaleShape(rows, cols, true, false)
		if err := need("grouped 128x128 rowwise scales", sinvRow, 4*sr*sc); err != nil {
			return err
		}
	}
	pmax := GroupedBlock2DColScaleCols(rows, groups)
	if outCol.Ptr() != 0 {
		if err := need("grouped 128x128 columnwise scales", sinvCol, 4*ceilDiv(cols, 128)*pmax); err != nil {
			return err
		}
	}
	return s.block2D(c, st, dt, x, rows, cols, outRow, sinvRow, outCol, sinvCol, pmax, o, ws.Offsets, groups, ws.Flag)
}

// BlockDequantize decodes a block FP8 operand as stored ([rows, cols]) to
// float32: code x scale_inv of its block.
func (s *Set) BlockDequantize(c *cuda.Ctx, st cuda.Stream, q cuda.Buffer, rows, cols int, sinv cuda.Buffer, scols int, tile2D bool, f Format, out cuda.Buffer) error {
	s.args.Reset().Buffer(q).I32(int32(rows)).I32(int32(cols)).Buffer(sinv).I32(int32(scols)).I32(b2i(tile2D)).I32(int32(f)).Buffer(out)
	return s.launch(c, "kq_blk_dequant", s.grid(int64(rows)*int64(cols), 4), cuda.Dim(threads), st)
}

// GroupedBlockCol is the grouped (MoE) Float8BlockScaling 128x1
// columnwise quantize of x [rows, cols] split along its rows by the device
// split sizes (each a multiple of 128 rows, else ws.Flag names the group
// and nothing is written): group g, rows [o_g, o_g+n_g), gets its own
// transposed data [cols, n_g] at out + cols*o_g and its own scale matrix
// [n_g/128, roundup(cols,4)] at sinv + 4*(o_g/128)*roundup(cols,4), so the
// groups' results concatenate without gaps, exactly as quantizing each
// group as a tensor of its own. Two launches whatever the group count:
// offsets, quantize.
func (s *Set) GroupedBlockCol(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, splits cuda.Buffer, groups int, ws GroupWorkspace, out, sinv cuda.Buffer, o BlockOpts) error {
	return s.GroupedBlockRowCol(c, st, dt, x, rows, cols, splits, groups, ws, cuda.Buffer{}, cuda.Buffer{}, out, sinv, o)
}

// GroupedBlockRowCol is the grouped quantize of both 1x128 operands in
// one pass over x: the rowwise ones as GroupedBlockRow lays them out
// (data [n_g, cols] in place, scales [ceil(cols/128), n_g] at
// ceil(cols/128)*o_g floats) and the columnwise ones as GroupedBlockCol;
// outRow/sinvRow may be zero Buffers (columnwise only). Two launches.
func (s *Set) GroupedBlockRowCol(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, splits cuda.Buffer, groups int, ws GroupWorkspace, outRow, sinvRow, outCol, sinvCol cuda.Buffer, o BlockOpts) error {
	if err := s.GroupOffsets(c, st, splits, groups, rows, 128, ws, 0); err != nil {
		return err
	}
	if outRow.Ptr() != 0 {
		if err := need("grouped block rowwise scales", sinvRow, 4*rows*ceilDiv(cols, 128)); err != nil {
			return err
		}
	}
	if err := need("grouped block columnwise scales", sinvCol, 4*ceilDiv(rows, 128)*roundUp(cols, 4)); err != nil {
		return err
	}
	return s.blockTile(c, st, dt, x, rows, cols, outRow, sinvRow, 0, outCol, sinvCol, roundUp(cols, 4), o, ws.Offsets, groups, ws.Flag)
}
