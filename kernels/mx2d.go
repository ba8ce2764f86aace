package kernels

import (
	"fmt"

	"github.com/kquant/kquant/agent/cuda"
)

// mx2dBlocksPerSM is the __launch_bounds__ of kq_mx2d (2 blocks of 256
// threads, at most 128 registers): the launcher's grid is the blocks that
// fit at once, so that the fused amax commits once per resident block.
const mx2dBlocksPerSM = 2

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
	type want struct {
		what string
		buf  cuda.Buffer
		n    int
		opt  bool
	}
	checks := []want{{"input", x, rows * cols * dt.Size(), false}}
	if doRow {
		checks = append(checks, want{"rowwise data", outRow, rows * cols, false}, want{"rowwise scales", scRow, rr * rc, false},
			want{"rowwise swizzled scales", swzRow, rr * rc, true})
	}
	if doCol {
		checks = append(checks, want{"columnwise data", outCol, rows * cols, false}, want{"columnwise scales", scCol, cr * cc, false},
			want{"columnwise swizzled scales", swzCol, cr * cc, true})
	}
	if state.Ptr() != 0 {
		checks = append(checks, want{"state", state, StateBytes, false})
	}
	for _, w := range checks {
		if w.opt && w.buf.Ptr() == 0 {
			continue
		}
		if err := need("MXFP82D "+w.what, w.buf, w.n); err != nil {
			return err
		}
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
	// One block per 128x128 macro tile (a warp per 32x64 piece), blocks
	// striding over them, at most those that fit at once.
	macros := int64(cr/4) * int64(cc/128)
	return s.launch(c, "kq_mx2d_"+dt.suffix(), cuda.Dim(int(max(min(macros, int64(s.sms*mx2dBlocksPerSM)), 1))), cuda.Dim(threads), st)
}
