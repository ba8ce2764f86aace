// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package kernels

import (
	"fmt"

	"github.com/kquant/kquant/internal/cuda"
)

// Grouped (MoE) per-tensor and MXFP8 quantize: one [rows, cols] input split
// along its rows by device split sizes (GroupOffsets), each group quantized
// as a tensor of its own, the groups' results concatenated as the
// reference's QuantizeGrouped returns them. Graph-safe: no launch shape
// depends on the split sizes.

// Row alignment of the groups (a misaligned group sets ws.Flag; read it
// with GroupError after the step).
const (
	GroupedCurrentAlign = 16
	GroupedMXFP8Align   = 32
)

// groupedQuantizeKernels are the grouped kernels of the quantize module.
func groupedQuantizeKernels() []string {
	var names []string
	for _, k := range []string{"kq_grp_amax_", "kq_grp_cast_", "kq_grp_cast_trw_", "kq_grp_cast_tr_", "kq_grp_mx_"} {
		for _, d := range []DType{F32, BF16, F16} {
			names = append(names, k+d.suffix())
		}
	}
	for _, k := range []string{"kq_grp_dcast_", "kq_grp_dcast_trw_", "kq_grp_dcast_tr_"} {
		for _, d := range []DType{F32, BF16, F16} {
			names = append(names, k+d.suffix())
		}
	}
	return append(names, "kq_grp_tiles", "kq_grp_mx2_bf16", "kq_grp_mx2_f16", "kq_grp_dupdate")
}

// CurrentOpts are the Float8CurrentScaling parameters of a grouped
// quantize: FP8 format, amax epsilon, power-of-2 scales.
type CurrentOpts struct {
	Format Format
	Eps    float32
	Pow2   bool
}

// GroupedCurrent is the grouped Float8CurrentScaling quantize: group g gets
// its own amax (ws.Amax[g], float32, the raw amax as the reference's
// Result.Amax), scale (scale[g]) and decode factor (scaleInv[g] = 1/scale,
// the operands' ScaleInv[0]), empty groups scale 1. outRow (rows*cols
// bytes) receives the rowwise codes in the input's layout (group g's
// [n_g, cols] at cols*o_g, o_g its first row); outCol (rows*cols bytes)
// the transposed codes, group g's [cols, n_g] at cols*o_g. Either may be
// the zero Buffer (not both), as may scale and scaleInv (4*groups bytes
// each); ws needs Offsets (4*(groups+1)), Flag (4) and Amax (4*groups).
// Groups must be multiples of 16 rows. Three launches whatever the group
// count: offsets, amax, cast (rowwise) or cast+transpose (with outCol;
// 128x128 tiles when rows % 16 == 0, cols % 8 == 0 and the buffers are
// aligned, else 16x32 element-wise tiles).
func (s *Set) GroupedCurrent(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, splits cuda.Buffer, groups int,
	ws GroupWorkspace, outRow, outCol, scale, scaleInv cuda.Buffer, o CurrentOpts) error {
	if outRow.Ptr() == 0 && outCol.Ptr() == 0 {
		return fmt.Errorf("kernels: GroupedCurrent without an output operand")
	}
	n := rows * cols
	if err := needAll("GroupedCurrent", bufNeed{"input", x, n * dt.Size(), false}, bufNeed{"group amaxes", ws.Amax, 4 * groups, false},
		bufNeed{"rowwise data", outRow, n, true}, bufNeed{"columnwise data", outCol, n, true},
		bufNeed{"group scales", scale, 4 * groups, true}, bufNeed{"group scale_inv", scaleInv, 4 * groups, true}); err != nil {
		return err
	}
	if err := s.GroupOffsets(c, st, splits, groups, rows, GroupedCurrentAlign, ws, groups); err != nil {
		return err
	}
	vec := cols%8 == 0 && x.Ptr()%16 == 0
	items := int64(rows/16) * int64(ceilDiv(cols, 256))
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(ws.Offsets).I32(int32(groups)).Buffer(ws.Flag).
		Buffer(ws.Amax).I32(b2i(vec))
	if err := s.launch(c, "kq_grp_amax_"+dt.suffix(), s.warpGrid(items, residentPerSM), cuda.Dim(threads), st); err != nil {
		return err
	}
	if outCol.Ptr() == 0 {
		s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(ws.Offsets).I32(int32(groups)).Buffer(ws.Flag).
			Buffer(ws.Amax).Buffer(outRow).Ptr(optional(scale)).Ptr(optional(scaleInv)).I32(int32(o.Format)).
			F32(o.Format.MaxFinite()).F32(o.Eps).I32(b2i(o.Pow2)).I32(b2i(vec && outRow.Ptr()%8 == 0))
		return s.launch(c, "kq_grp_cast_"+dt.suffix(), s.warpGrid(items, residentPerSM), cuda.Dim(threads), st)
	}
	s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(ws.Offsets).I32(int32(groups)).Buffer(ws.Flag).
		Buffer(ws.Amax).Ptr(optional(outRow)).Buffer(outCol).Ptr(optional(scale)).Ptr(optional(scaleInv)).I32(int32(o.Format)).
		F32(o.Format.MaxFinite()).F32(o.Eps).I32(b2i(o.Pow2))
	if wideTranspose(rows, cols, x, outRow, outCol) {
		// One block per 128x128 tile, as CastTranspose.
		tiles := int64(ceilDiv(cols, 128)) * int64(ceilDiv(rows, 128))
		return s.launch(c, "kq_grp_cast_trw_"+dt.suffix(), cuda.Dim(int(max(tiles, 1))), cuda.Dim(threads), st)
	}
	tiles := int64(ceilDiv(cols, 32)) * int64(rows/16)
	return s.launch(c, "kq_grp_cast_tr_"+dt.suffix(), cuda.Dim(int(max(min(tiles, int64(s.sms*wavesPerSM)), 1))), cuda.Dim(threads), st)
}

// DelayedOpts are the DelayedScaling parameters of a grouped quantize: FP8
// format, amax history length (entries per group), margin, the amax
// algorithm (MostRecent: entry 0, else the history's maximum), and Update:
// end the step with each group's delayed update.
type DelayedOpts struct {
	Format     Format
	HistoryLen int
	Margin     int
	MostRecent bool
	Update     bool
}

// GroupedDelayed is the grouped DelayedScaling quantize of x [rows, cols]
// split along its rows by the device split sizes (int32, splits): group g
// casts with its own state's scale, scale[g] (float32, the scale the
// previous update computed), and records its amax. Per-group state,
// contiguous: scale (4*groups bytes) and history (4*groups*HistoryLen
// bytes, group g's amax history at g*HistoryLen floats). Outputs: ws.Amax[g]
// (float32, the group's max |x|, NaN ignored: the reference's Result.Amax),
// scaleInv[g] = 1/scale[g] (the operands' ScaleInv[0]; unless the zero
// Buffer), history[g][0] raised to the group's amax (quant.State.RecordAmax),
// and outRow (rows*cols bytes, group g's rowwise codes [n_g, cols] at
// cols*o_g, o_g its first row) and outCol (rows*cols bytes, group g's
// transposed codes [cols, n_g] at cols*o_g), either of which may be the
// zero Buffer (not both). With o.Update, each group's delayed update
// (contract: "Delayed scaling") follows: new scale[g] from the history,
// history rolled; scaleInv keeps this step's decode factors. ws needs
// Offsets (4*(groups+1)), Flag (4) and Amax (4*groups). Groups must be
// multiples of GroupedCurrentAlign (16) rows; a misaligned group, or sizes
// that do not add up to rows, sets ws.Flag and the step changes nothing
// (GroupError names the group). Three launches whatever the group count,
// none shaped by the split sizes (graph-safe): offsets (zeroing ws.Amax),
// one fused cast+amax pass (rowwise; with outCol, cast+transpose over
// 128x128 tiles when rows % 16 == 0, cols % 8 == 0 and the buffers are
// aligned, else 16x32 element-wise tiles), and the per-group history
// update, one block per group.
func (s *Set) GroupedDelayed(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, splits cuda.Buffer, groups int,
	ws GroupWorkspace, outRow, outCol, scale, scaleInv, history cuda.Buffer, o DelayedOpts) error {
	if outRow.Ptr() == 0 && outCol.Ptr() == 0 {
		return fmt.Errorf("kernels: GroupedDelayed without an output operand")
	}
	if o.HistoryLen < 1 {
		return fmt.Errorf("kernels: GroupedDelayed with an amax history of %d entries", o.HistoryLen)
	}
	n := rows * cols
	if err := needAll("GroupedDelayed", bufNeed{"input", x, n * dt.Size(), false}, bufNeed{"group amaxes", ws.Amax, 4 * groups, false},
		bufNeed{"rowwise data", outRow, n, true}, bufNeed{"columnwise data", outCol, n, true},
		bufNeed{"group scales", scale, 4 * groups, false}, bufNeed{"group scale_inv", scaleInv, 4 * groups, true},
		bufNeed{"amax histories", history, 4 * groups * o.HistoryLen, false}); err != nil {
		return err
	}
	if err := s.GroupOffsets(c, st, splits, groups, rows, GroupedCurrentAlign, ws, groups); err != nil {
		return err
	}
	if outCol.Ptr() == 0 {
		vec := cols%8 == 0 && x.Ptr()%16 == 0 && outRow.Ptr()%8 == 0
		items := int64(rows/16) * int64(ceilDiv(cols, 256))
		s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(ws.Offsets).I32(int32(groups)).Buffer(ws.Flag).
			Buffer(ws.Amax).Buffer(outRow).Buffer(scale).Ptr(optional(scaleInv)).I32(int32(o.Format)).I32(b2i(vec))
		// At most the resident blocks (__launch_bounds__(256, 3)).
		if err := s.launch(c, "kq_grp_dcast_"+dt.suffix(), s.warpGrid(items, 3), cuda.Dim(threads), st); err != nil {
			return err
		}
	} else {
		s.args.Reset().Buffer(x).I32(int32(rows)).I32(int32(cols)).Buffer(ws.Offsets).I32(int32(groups)).Buffer(ws.Flag).
			Buffer(ws.Amax).Ptr(optional(outRow)).Buffer(outCol).Buffer(scale).Ptr(optional(scaleInv)).I32(int32(o.Format))
		var err error
		if wideTranspose(rows, cols, x, outRow, outCol) {
			// The resident blocks (__launch_bounds__(256, 3)), each over a
			// contiguous range of the 128x128 tiles.
			tiles := int64(ceilDiv(cols, 128)) * int64(ceilDiv(rows, 128))
			err = s.launch(c, "kq_grp_dcast_trw_"+dt.suffix(), cuda.Dim(int(max(min(tiles, int64(s.sms*3)), 1))), cuda.Dim(threads), st)
		} else {
			tiles := int64(ceilDiv(cols, 32)) * int64(rows/16)
			err = s.launch(c, "kq_grp_dcast_tr_"+dt.suffix(), cuda.Dim(int(max(min(tiles, int64(s.sms*wavesPerSM)), 1))), cuda.Dim(threads), st)
		}
		if err != nil {
			return err
		}
	}
	block := 32
	if o.Update {
		block = min(1024, roundUp(o.HistoryLen, 32))
	}
	s.args.Reset().Buffer(ws.Flag).Buffer(ws.Amax).Buffer(scale).Buffer(history).I32(int32(o.HistoryLen)).
		F32(o.Format.MaxFinite()).I32(int32(o.Margin)).I32(b2i(o.MostRecent)).I32(b2i(o.Update))
	return s.launch(c, "kq_grp_dupdate", cuda.Dim(groups), cuda.Dim(block), st)
}
