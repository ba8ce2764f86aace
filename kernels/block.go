package kernels

import (
	"fmt"

	"github.com/kquant/kquant/agent/cuda"
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

func (s *Set) blockRow(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, out, sinv cuda.Buffer, scols int, o BlockOpts, offsets cuda.Buffer, groups int, flag cuda.Buffer) error {
	if rows == 0 || cols == 0 {
		return nil
	}
	vec := cols%4 == 0 && aligned(uint64(4*dt.Size()), x) && aligned(4, out)
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(out).Buffer(sinv).I32(int32(scols)).
		I32(int32(o.Format)).F32(o.Eps).I32(b2i(o.Pow2)).I32(b2i(vec)).Ptr(optional(offsets)).I32(int32(groups)).Ptr(optional(flag))
	// One warp per rowUnroll blocks of a row (KQ_ROW_UNROLL in block.cu).
	const rowUnroll = 4
	warps := int64(rows) * int64(ceilDiv(ceilDiv(cols, 128), rowUnroll))
	return s.launch(c, "kq_blk_row_"+dt.suffix(), s.grid(warps*32, 1), cuda.Dim(threads), st)
}

// BlockCol quantizes the columnwise operand in 128x1 blocks: data
// transposed to out ([cols, rows]), 1/scale to sinv (BlockScaleShape).
// One launch.
func (s *Set) BlockCol(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, out, sinv cuda.Buffer, o BlockOpts) error {
	sr, sc := BlockScaleShape(rows, cols, false, true)
	if err := need("BlockCol scales", sinv, 4*sr*sc); err != nil {
		return err
	}
	if rows == 0 || cols == 0 {
		return nil
	}
	if ceilDiv(rows, 128) > 65535 {
		return fmt.Errorf("kernels: BlockCol of %d rows: too many", rows)
	}
	vec := rows%16 == 0 && aligned(16, out)
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(out).Buffer(sinv).I32(int32(sc)).
		I32(int32(o.Format)).F32(o.Eps).I32(b2i(o.Pow2)).I32(b2i(vec))
	return s.launch(c, "kq_blk_col_"+dt.suffix(), cuda.Dim2(ceilDiv(cols, 32), ceilDiv(rows, 128)), cuda.Dim(threads), st)
}

// Block2D quantizes in 128x128 tiles: rowwise data to outRow and
// transposed data to outCol with their scale matrices (either pair may be
// zero Buffers). One launch.
func (s *Set) Block2D(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, outRow, sinvRow, outCol, sinvCol cuda.Buffer, o BlockOpts) error {
	_, scr := BlockScaleShape(rows, cols, true, false)
	_, scc := BlockScaleShape(rows, cols, true, true)
	if rows == 0 || cols == 0 {
		return nil
	}
	if ceilDiv(rows, 128) > 65535 {
		return fmt.Errorf("kernels: Block2D of %d rows: too many", rows)
	}
	vec := cols%4 == 0 && rows%16 == 0 && aligned(uint64(4*dt.Size()), x) && aligned(16, outRow, outCol)
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Ptr(optional(outRow)).Ptr(optional(sinvRow)).I32(int32(scr)).
		Ptr(optional(outCol)).Ptr(optional(sinvCol)).I32(int32(scc)).I32(int32(o.Format)).F32(o.Eps).I32(b2i(o.Pow2)).I32(b2i(vec))
	return s.launch(c, "kq_blk_2d_"+dt.suffix(), cuda.Dim2(ceilDiv(cols, 128), ceilDiv(rows, 128)), cuda.Dim(threads), st)
}

// BlockDequantize decodes a block FP8 operand as stored ([rows, cols]) to
// float32: code x scale_inv of its block.
func (s *Set) BlockDequantize(c *cuda.Ctx, st cuda.Stream, q cuda.Buffer, rows, cols int, sinv cuda.Buffer, scols int, tile2D bool, f Format, out cuda.Buffer) error {
	s.args.Reset().Buffer(q).I32(int32(rows)).I32(int32(cols)).Buffer(sinv).I32(int32(scols)).I32(b2i(tile2D)).I32(int32(f)).Buffer(out)
	return s.launch(c, "kq_blk_dequant", s.grid(int64(rows)*int64(cols), 4), cuda.Dim(threads), st)
}
