// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package kernels

import (
	"fmt"

	"github.com/kquant/kquant/internal/cuda"
)

// GroupedNVFP4Out is one operand's outputs of a grouped NVFP4 quantize:
// the groups' packed codes, E4M3 scale matrices and their GEMM (swizzled)
// layouts, concatenated. The zero value leaves the operand out.
type GroupedNVFP4Out struct {
	Data, Scales, Swizzled cuda.Buffer
}

// GroupedNVFP4ColScaleBytes is the size of the concatenated columnwise
// scale matrices of a grouped NVFP4 quantize of [rows, cols] with 128-row
// aligned groups: group g's [roundup(cols,128), n_g/16] matrix (no padding
// columns) at roundup(cols,128)*o_g/16.
func GroupedNVFP4ColScaleBytes(rows, cols int) int { return roundUp(cols, 128) * (rows / 16) }

// GroupedNVFP4 is the grouped (MoE) 1D NVFP4 quantize of x [rows, cols]
// split along its rows by the device split sizes (int32, 128-row aligned),
// either or both operands, each group quantized as a tensor of its own
// (the reference's QuantizeGrouped), the grid sized for the whole tensor
// whatever the split:
//
//   - rowwise (row.Data set): as GroupedNVFP4Row: codes rows*NVFP4RowBytes(cols),
//     scales and swizzled scales rows*roundup(ceil(cols/16),4) bytes;
//   - columnwise (col.Data set): group g's [cols, n_g] codes (rows of n_g/2
//     bytes) at byte cols*o_g/2 of col.Data (cols*rows/2 bytes in all), its
//     scale matrix [roundup(cols,128), n_g/16] and its swizzled layout at
//     roundup(cols,128)*o_g/16 of col.Scales and col.Swizzled
//     (GroupedNVFP4ColScaleBytes each); with o.RHT each 16-row run
//     transformed; with o.Stochastic group g's columnwise stream (elements
//     numbered k*n_g + the row within the group), as NVFP4Opts.Group = g on
//     the group's slice would draw it.
//
// o.Group must be 0 (the kernels number the groups). ws.Amax receives the
// groups' input amaxes (4*groups bytes), and with o.RHT and the columnwise
// operand the groups' amaxes of the transformed columns in words groups to
// 2*groups-1 (8*groups bytes). Launches, whatever the group count: the
// offsets, the input amax (unless only the RHT columnwise operand is
// wanted), the RHT amax (columnwise with o.RHT), the rowwise and the
// columnwise quantize: 3 to 5.
func (s *Set) GroupedNVFP4(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, splits cuda.Buffer, groups int, ws GroupWorkspace, row, col GroupedNVFP4Out, o NVFP4Opts) error {
	if o.Group != 0 {
		return fmt.Errorf("kernels: GroupedNVFP4 takes no group stream (group %d): the kernels number the groups", o.Group)
	}
	hasRow, hasCol := row.Data.Ptr() != 0, col.Data.Ptr() != 0
	rhtCol := hasCol && o.RHT
	words := groups
	if rhtCol {
		words = 2 * groups
	}
	if err := need("grouped NVFP4 amax", ws.Amax, 4*words); err != nil {
		return err
	}
	sc := roundUp(ceilDiv(cols, 16), 4)
	if hasRow {
		if err := need("grouped NVFP4 data", row.Data, rows*NVFP4RowBytes(cols)); err != nil {
			return err
		}
		if err := need("grouped NVFP4 scales", row.Scales, rows*sc); err != nil {
			return err
		}
	}
	csr := roundUp(cols, 128)
	if hasCol {
		if err := need("grouped NVFP4 columnwise data", col.Data, cols*NVFP4RowBytes(rows)); err != nil {
			return err
		}
		if err := need("grouped NVFP4 columnwise scales", col.Scales, GroupedNVFP4ColScaleBytes(rows, cols)); err != nil {
			return err
		}
	}
	if err := s.GroupOffsets(c, st, splits, groups, rows, 128, ws, words); err != nil {
		return err
	}
	if rows == 0 || cols == 0 || (!hasRow && !hasCol) {
		return nil
	}
	if hasRow || !o.RHT {
		if err := s.nvfp4Amax(c, st, dt, x, rows, cols, ws.Amax, ws.Offsets, groups, ws.Flag); err != nil {
			return err
		}
	}
	if hasRow {
		if err := s.nvfp4Row(c, st, dt, x, rows, cols, ws.Amax, row.Data, row.Scales, row.Swizzled, rows, sc, o, ws.Offsets, groups, ws.Flag); err != nil {
			return err
		}
	}
	if !hasCol {
		return nil
	}
	am := ws.Amax
	if rhtCol {
		am = ws.Amax.Slice(4*groups, 4*groups)
		if err := s.nvfp4AmaxRHT(c, st, dt, x, rows, cols, am, o.Signs, ws.Offsets, groups, ws.Flag, cuda.Buffer{}); err != nil {
			return err
		}
	}
	return s.nvfp4Col(c, st, dt, x, rows, cols, am, col.Data, col.Scales, col.Swizzled, csr, rows/16, o, ws.Offsets, groups, ws.Flag)
}

// GroupedNVFP4Col is GroupedNVFP4 for the columnwise operand alone (the
// RHT and stochastic rounding of o): offsets, amax (the RHT amax with
// o.RHT), quantize: 3 launches whatever the group count.
func (s *Set) GroupedNVFP4Col(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, splits cuda.Buffer, groups int, ws GroupWorkspace, col GroupedNVFP4Out, o NVFP4Opts) error {
	if col.Data.Ptr() == 0 {
		return fmt.Errorf("kernels: GroupedNVFP4Col without columnwise outputs")
	}
	return s.GroupedNVFP4(c, st, dt, x, rows, cols, splits, groups, ws, GroupedNVFP4Out{}, col, o)
}

// GroupedNVFP4TwoD is the grouped NVFP4 quantize with 16x16 tiles
// (weights) of x [rows, cols] split along its rows by the device split
// sizes (int32, 128-row aligned), each group a tensor of its own with its
// own amax (ws.Amax[g], 4*groups bytes) and tensor scale:
//
//   - rowwise (row.Data set): codes rows*NVFP4RowBytes(cols), scales
//     and, unless row.Swizzled is the zero Buffer, their GEMM layout,
//     rows*roundup(ceil(cols/16),4) bytes each (the groups' matrices
//     concatenate into the whole tensor's);
//   - columnwise (col.Data set): the same codes transposed per group,
//     group g's [cols, n_g] at byte cols*o_g/2, scales and their swizzled
//     layout [roundup(cols,128), n_g/16] at roundup(cols,128)*o_g/16
//     (GroupedNVFP4ColScaleBytes each).
//
// Launches, whatever the group count: the offsets, the amax, a memset of
// each scale buffer whose layout has padding (rowwise when ceil(cols/16)
// is not a multiple of 4, columnwise when cols is not a multiple of 128)
// and the 2D kernel, which writes the swizzled scales itself: 3 to 7.
func (s *Set) GroupedNVFP4TwoD(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, splits cuda.Buffer, groups int, ws GroupWorkspace, row, col GroupedNVFP4Out) error {
	if err := need("grouped NVFP4 amax", ws.Amax, 4*groups); err != nil {
		return err
	}
	sc := roundUp(ceilDiv(cols, 16), 4)
	hasRow := row.Data.Ptr() != 0
	if hasRow {
		if err := need("grouped NVFP4 2D data", row.Data, rows*NVFP4RowBytes(cols)); err != nil {
			return err
		}
		if err := need("grouped NVFP4 2D scales", row.Scales, rows*sc); err != nil {
			return err
		}
	} else {
		row = GroupedNVFP4Out{}
	}
	hasCol := col.Data.Ptr() != 0
	if !hasRow && !hasCol {
		return fmt.Errorf("kernels: GroupedNVFP4TwoD without outputs")
	}
	if hasCol {
		if err := need("grouped NVFP4 2D columnwise data", col.Data, cols*NVFP4RowBytes(rows)); err != nil {
			return err
		}
		if err := need("grouped NVFP4 2D columnwise scales", col.Scales, GroupedNVFP4ColScaleBytes(rows, cols)); err != nil {
			return err
		}
	} else {
		col = GroupedNVFP4Out{}
	}
	if err := s.GroupOffsets(c, st, splits, groups, rows, 128, ws, groups); err != nil {
		return err
	}
	if rows == 0 || cols == 0 {
		return nil
	}
	zero := func(bs ...cuda.Buffer) error {
		for _, b := range bs {
			if b.Ptr() == 0 {
				continue
			}
			if err := c.MemsetAsync(b, 0, st); err != nil {
				return fmt.Errorf("kernels: zeroing grouped NVFP4 scales: %w", err)
			}
		}
		return nil
	}
	if hasRow && ceilDiv(cols, 16)%4 != 0 {
		if err := zero(row.Scales.Slice(0, rows*sc), optionalSlice(row.Swizzled, rows*sc)); err != nil {
			return err
		}
	}
	if hasCol && cols%128 != 0 {
		n := GroupedNVFP4ColScaleBytes(rows, cols)
		if err := zero(col.Scales.Slice(0, n), optionalSlice(col.Swizzled, n)); err != nil {
			return err
		}
	}
	if err := s.nvfp4Amax(c, st, dt, x, rows, cols, ws.Amax, ws.Offsets, groups, ws.Flag); err != nil {
		return err
	}
	return s.nvfp4TwoD(c, st, dt, x, rows, cols, ws.Amax, row.Data, row.Scales, row.Swizzled, col.Data, col.Scales, col.Swizzled,
		sc, rows/16, ws.Offsets, groups, ws.Flag)
}

// optionalSlice is b's first n bytes, or the zero Buffer when b is.
func optionalSlice(b cuda.Buffer, n int) cuda.Buffer {
	if b.Ptr() == 0 {
		return b
	}
	return b.Slice(0, n)
}
