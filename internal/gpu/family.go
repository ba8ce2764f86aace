// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"context"
	"fmt"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/kernels"
)

// family is one scheme family's share of a step: for a plain tensor (part)
// and for a grouped one (grouped), what it allocates, which kernels it
// queues and how its outputs read back as operands. Each family lives in a
// file of its own (fp8_pertensor.go, fp8_block.go, mxfp8.go, nvfp4.go);
// step.go, buffers.go and grouped.go keep what every family shares:
// buffers, inputs, capture and replay, snapshots and the walk over the
// groups.
type family interface {
	// alloc allocates p's outputs and adds its launches and least traffic
	// to s.
	alloc(s *Step, c *cuda.Ctx, p *part) error
	// enqueue queues p's kernels.
	enqueue(c *cuda.Ctx, set *kernels.Set, st cuda.Stream, p *part) error
	// readOperand completes o, p's rowwise or columnwise operand whose
	// codes are read, from the device: its scales (sc and swz are the
	// operand's scale buffers) and what else the family keeps. state is
	// p's per-tensor state.
	readOperand(c *cuda.Ctx, p *part, o *quant.Operand, colwise bool, sc, swz cuda.Buffer, state []byte) error
	// allocGrouped allocates g's outputs for the covered operands and adds
	// its launches and least traffic to s.
	allocGrouped(s *Step, c *cuda.Ctx, g *grouped, covered quant.Usage, out func(int) (cuda.Buffer, error)) error
	// enqueueGrouped queues g's kernels, which read the split sizes from
	// device memory.
	enqueueGrouped(c *cuda.Ctx, set *kernels.Set, st cuda.Stream, g *grouped) error
	// readGroup fills res with group i's operands (rows [off, off+n) of
	// the input, n > 0) from the step's downloaded outputs.
	readGroup(s *Step, c *cuda.Ctx, r *groupOutputs, res *quant.Result, i, off, n int) error
	// emptyGroup is the result of group i when it is empty.
	emptyGroup(ctx context.Context, g *grouped, r *groupOutputs, i int) (*quant.Result, error)
}

// familyOf is the family of a scheme: the one place a step looks at the
// scheme to decide what runs.
func familyOf(s quant.Scheme) (family, error) {
	switch s {
	case quant.Float8CurrentScaling, quant.DelayedScaling:
		return perTensorFP8{}, nil
	case quant.Float8BlockScaling:
		return blockFP8{}, nil
	case quant.MXFP8BlockScaling:
		return mxfp8{}, nil
	case quant.NVFP4BlockScaling:
		return nvfp4{}, nil
	}
	return nil, fmt.Errorf("scheme %s: %w", s, ErrNotImplemented)
}
