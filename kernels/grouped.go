// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package kernels

import (
	"encoding/binary"
	"fmt"

	"github.com/kquant/kquant/internal/cuda"
)

// GroupWorkspace is the device state of a grouped quantize: Offsets
// (4*(groups+1) bytes, made by the step from the device split sizes), Flag
// (4 bytes, written by every step: 0, or the 1-based index of the first
// misaligned group, or -1 when the sizes do not add up to the rows) and
// Amax (4*groups bytes, the per-group amax of recipes with a tensor scale).
type GroupWorkspace struct {
	Offsets, Flag, Amax cuda.Buffer
}

// MaxGroups bounds the group count of a grouped quantize.
const MaxGroups = 1 << 16

// GroupOffsets turns the device split sizes (int32 row counts) into
// ws.Offsets, checks them against the alignment and the total row count
// into ws.Flag, and zeroes the first nzero words of ws.Amax. One launch.
func (s *Set) GroupOffsets(c *cuda.Ctx, st cuda.Stream, splits cuda.Buffer, groups, totalRows, align int, ws GroupWorkspace, nzero int) error {
	if groups < 1 || groups > MaxGroups {
		return fmt.Errorf("kernels: %d groups: want 1 to %d", groups, MaxGroups)
	}
	if err := need("group offsets", ws.Offsets, 4*(groups+1)); err != nil {
		return err
	}
	if err := need("split sizes", splits, 4*groups); err != nil {
		return err
	}
	s.args.Reset().Buffer(splits).I32(int32(groups)).I32(int32(totalRows)).I32(int32(align)).Buffer(ws.Offsets).Buffer(ws.Flag).
		Ptr(optional(ws.Amax)).I32(int32(nzero))
	return s.launch(c, "kq_grp_offsets", cuda.Dim(1), cuda.Dim(1024), st)
}

// GroupedNVFP4Row is the grouped (MoE) NVFP4 rowwise quantize of x [rows,
// cols] split along its rows by the device split sizes: each group gets
// its own amax and tensor scale (ws.Amax[g]), its own SR stream (group g,
// elements numbered from its first row), and its data and scales as a
// tensor of its own, the groups' results concatenated (with 128-row
// aligned groups the padded scale matrices and their swizzled layouts
// concatenate without gaps). Three launches whatever the group count:
// offsets, amax, quantize.
func (s *Set) GroupedNVFP4Row(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, splits cuda.Buffer, groups int, ws GroupWorkspace, out, scales, swz cuda.Buffer, o NVFP4Opts) error {
	if err := need("grouped amax", ws.Amax, 4*groups); err != nil {
		return err
	}
	if err := s.GroupOffsets(c, st, splits, groups, rows, 128, ws, groups); err != nil {
		return err
	}
	if rows == 0 || cols == 0 {
		return nil
	}
	if err := s.nvfp4Amax(c, st, dt, x, rows, cols, ws.Amax, ws.Offsets, groups, ws.Flag); err != nil {
		return err
	}
	sc := roundUp(ceilDiv(cols, 16), 4)
	if err := need("grouped NVFP4 scales", scales, rows*sc); err != nil {
		return err
	}
	return s.nvfp4Row(c, st, dt, x, rows, cols, ws.Amax, out, scales, swz, rows, sc, o, ws.Offsets, groups, ws.Flag)
}

// GroupedBlockRow is the grouped Float8BlockScaling 1x128 rowwise quantize:
// group g's scales are its own [ceil(cols/128), n_g] matrix at
// ceil(cols/128)*offset_g floats. Two launches: offsets, quantize.
func (s *Set) GroupedBlockRow(c *cuda.Ctx, st cuda.Stream, dt DType, x cuda.Buffer, rows, cols int, splits cuda.Buffer, groups int, ws GroupWorkspace, out, sinv cuda.Buffer, o BlockOpts) error {
	if err := s.GroupOffsets(c, st, splits, groups, rows, 128, ws, 0); err != nil {
		return err
	}
	if err := need("grouped block scales", sinv, 4*rows*ceilDiv(cols, 128)); err != nil {
		return err
	}
	return s.blockRow(c, st, dt, x, rows, cols, out, sinv, 0, o, ws.Offsets, groups, ws.Flag)
}

// GroupError reads a grouped step's device flag (a synchronising read: call
// it after the step, outside any capture) and returns an error naming the
// offending group, or nil.
func GroupError(c *cuda.Ctx, flag cuda.Buffer, splitsHint []int32, align int) error {
	var b [4]byte
	if err := c.CopyToHost(b[:], flag); err != nil {
		return fmt.Errorf("reading the grouped-quantize flag: %w", err)
	}
	v := int32(binary.LittleEndian.Uint32(b[:]))
	switch {
	case v == 0:
		return nil
	case v < 0:
		return fmt.Errorf("grouped quantize: split sizes do not add up to the tensor's rows")
	}
	g := int(v - 1)
	if g < len(splitsHint) {
		return fmt.Errorf("grouped quantize: group %d has %d rows, not a multiple of %d", g, splitsHint[g], align)
	}
	return fmt.Errorf("grouped quantize: group %d's row count is negative or not a multiple of %d", g, align)
}
