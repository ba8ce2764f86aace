// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package kernels

import (
	"fmt"

	"github.com/kquant/kquant/internal/cuda"
)

// ModuleTiming holds the benchmarks' lead-in kernel (timing.cu).
const ModuleTiming = "timing"

// LeadInBytes is the scratch a LeadIn sweeps: larger than any GPU's L2, and
// long enough to read (about 60 µs at 4.8 TB/s, 80 µs at 3.35 TB/s) to
// cover the host's enqueueing of any step (at most about 25 µs eager).
const LeadInBytes = 256 << 20

// LeadIn is the work every benchmark queues on its stream just before a
// timed region's start event. The GPU is busy with it while the host
// enqueues the start event, the step and the end event, so the events time
// the GPU's work only: started from an idle stream, the start event is
// stamped at once and the host's latency of the first launch (about 4-5
// µs, 5-7% of a step at 8192²) would count as GPU time. nvbench's blocking
// kernel and triton's do_bench, which clears L2 before each timed call, do
// the same. It reads a scratch buffer and writes nothing (kq_l2_sweep), so
// the step starts with an L2 that holds none of its input and no dirty
// lines: a memset lead-in charged the write-back of up to L2's size to the
// step (timing.cu).
type LeadIn struct {
	set     *Set
	scratch cuda.Buffer
}

// NewLeadIn allocates and zeroes the scratch; Free releases it.
func (s *Set) NewLeadIn(c *cuda.Ctx) (*LeadIn, error) {
	buf, err := c.Alloc(LeadInBytes)
	if err != nil {
		return nil, fmt.Errorf("timing lead-in: %w", err)
	}
	// Zero, so that the sweep's XOR never equals its magic and it never
	// writes (timing.cu).
	if err := c.Memset(buf, 0); err != nil {
		_ = c.Free(buf)
		return nil, fmt.Errorf("timing lead-in: %w", err)
	}
	return &LeadIn{set: s, scratch: buf}, nil
}

// Queue queues the sweep on st.
func (l *LeadIn) Queue(c *cuda.Ctx, st cuda.Stream) error {
	s := l.set
	s.args.Reset().Buffer(l.scratch).I64(int64(l.scratch.Size() / 16)).Buffer(l.scratch).U32(1)
	if err := s.launch(c, "kq_l2_sweep", cuda.Dim(s.sms*residentPerSM), cuda.Dim(threads), st); err != nil {
		return fmt.Errorf("timing lead-in: %w", err)
	}
	return nil
}

// Free releases the scratch.
func (l *LeadIn) Free(c *cuda.Ctx) error { return c.Free(l.scratch) }
