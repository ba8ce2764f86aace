// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package kernels_test

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/kernels"
)

// measure runs a benchmark test's body with a timer of iters repetitions
// on the tests' context and buffers; it runs only with KQUANT_BENCH=1.
func measure(t *testing.T, iters int, fn func(c *cuda.Ctx, b *bufs, tm *timer) error) {
	t.Helper()
	if os.Getenv("KQUANT_BENCH") != "1" {
		t.Skip("set KQUANT_BENCH=1 to measure")
	}
	run(t, func(c *cuda.Ctx, b *bufs) error {
		tm, err := newTimer(c, iters)
		if err != nil {
			return err
		}
		defer tm.close()
		return fn(c, b, tm)
	})
}

// timer measures launches on the tests' stream: GPU time with events, host
// time of the enqueue alone.
type timer struct {
	c      *cuda.Ctx
	e0, e1 cuda.Event
	iters  int
	// leadIn is queued just before each start event, as internal/gpu's
	// Measure does (kernels.LeadIn says why).
	leadIn *kernels.LeadIn
}

// newTimer creates the events; close releases them.
func newTimer(c *cuda.Ctx, iters int) (*timer, error) {
	e0, err := c.NewEvent()
	if err != nil {
		return nil, err
	}
	e1, err := c.NewEvent()
	if err != nil {
		_ = c.DestroyEvent(e0)
		return nil, err
	}
	lead, err := set.NewLeadIn(c)
	if err != nil {
		_ = c.DestroyEvent(e0)
		_ = c.DestroyEvent(e1)
		return nil, err
	}
	return &timer{c: c, e0: e0, e1: e1, iters: iters, leadIn: lead}, nil
}

func (t *timer) close() {
	_ = t.c.DestroyEvent(t.e0)
	_ = t.c.DestroyEvent(t.e1)
	_ = t.leadIn.Free(t.c)
}

// gpuMillis returns the median GPU milliseconds of fn over iters calls,
// after 3 warm-up calls.
func (t *timer) gpuMillis(fn func() error) (float64, error) {
	for range 3 {
		if err := fn(); err != nil {
			return 0, err
		}
	}
	var ms []float64
	for range t.iters {
		if err := t.leadIn.Queue(t.c, stream); err != nil {
			return 0, err
		}
		_ = t.c.Record(t.e0, stream)
		if err := fn(); err != nil {
			return 0, err
		}
		_ = t.c.Record(t.e1, stream)
		if err := t.c.EventSynchronize(t.e1); err != nil {
			return 0, err
		}
		v, err := t.c.ElapsedMillis(t.e0, t.e1)
		if err != nil {
			return 0, err
		}
		ms = append(ms, float64(v))
	}
	slices.Sort(ms)
	return ms[len(ms)/2], nil
}

// hostMicros returns the median over rounds of the host microseconds per
// call of fn, k calls a round, enqueue only (the stream drained before each
// round and after the last).
func (t *timer) hostMicros(fn func() error, k, rounds int) (float64, error) {
	var us []float64
	for range rounds {
		if err := t.c.StreamSynchronize(stream); err != nil {
			return 0, err
		}
		start := time.Now()
		for range k {
			if err := fn(); err != nil {
				return 0, err
			}
		}
		us = append(us, float64(time.Since(start).Nanoseconds())/1e3/float64(k))
	}
	if err := t.c.StreamSynchronize(stream); err != nil {
		return 0, err
	}
	slices.Sort(us)
	return us[len(us)/2], nil
}

// stepCosts times a step: GPU milliseconds (events), host microseconds per
// eager call, and host microseconds per replay of the step captured once as
// a graph (20 calls a round, median of rounds).
func (t *timer) stepCosts(fn func() error, rounds int) (gpuMs, eagerUs, graphUs float64, err error) {
	if gpuMs, err = t.gpuMillis(fn); err != nil {
		return 0, 0, 0, err
	}
	if eagerUs, err = t.hostMicros(fn, 20, rounds); err != nil {
		return 0, 0, 0, err
	}
	g, err := t.c.Capture(stream, fn)
	if err != nil {
		return 0, 0, 0, err
	}
	defer func() { _ = t.c.DestroyGraphExec(g) }()
	if graphUs, err = t.hostMicros(func() error { return t.c.LaunchGraph(g, stream) }, 20, rounds); err != nil {
		return 0, 0, 0, err
	}
	return gpuMs, eagerUs, graphUs, nil
}

// copyBandwidth measures the device-to-device copy of 1 GiB, counting bytes
// read plus bytes written, prints it, and frees every buffer of b.
func (t *timer) copyBandwidth(b *bufs) (float64, error) {
	const copyBytes = 1 << 30
	src, dst := b.alloc(copyBytes, 1), b.alloc(copyBytes, 0)
	cms, err := t.gpuMillis(func() error { return t.c.CopyAsync(dst, src, copyBytes, stream) })
	if err != nil {
		return 0, err
	}
	bw := 2 * copyBytes / (cms * 1e-3) / 1e9
	b.free()
	b.all = nil
	fmt.Printf("device-to-device copy: %.3f ms for 1 GiB, %.0f GB/s (read+write)\n", cms, bw)
	return bw, nil
}
