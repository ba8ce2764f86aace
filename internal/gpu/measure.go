// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/measure"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/kernels"
)

var (
	_ measure.Measurer = (*Backend)(nil)
	_ measure.Coverage = (*Backend)(nil)
)

// Sizes and repeats of the measurements.
const (
	// copyBytes is the size of the device-to-device copy whose bandwidth
	// the steps are compared with: far larger than L2, so it measures
	// device memory.
	copyBytes = 512 << 20
	copyRuns  = 7
	// hostBatch steps are queued back to back per host-time sample; a
	// batch stays well inside the driver's launch queue, so enqueueing
	// never waits for the GPU.
	hostBatch   = 64
	hostSamples = 5
	// launchBatch single launches per latency sample.
	launchBatch = 256
)

// stepConfigs turns the engine's step into the tensors of a device step that
// ends with the delayed-scaling update (a whole training step), with their
// inputs and states.
func stepConfigs(step measure.Step) ([]Config, []quant.Tensor, []*quant.State, error) {
	var (
		cfgs   []Config
		inputs []quant.Tensor
		states []*quant.State
	)
	for _, t := range step.Tensors() {
		cfgs = append(cfgs, Config{Request: t.Request, Rows: t.X.Rows, Cols: t.X.Cols, Input: InputType(t.X.Data), EndStep: true})
		inputs = append(inputs, t.X)
		states = append(states, t.State)
	}
	if len(cfgs) == 0 {
		return nil, nil, nil, fmt.Errorf("step has no tensors")
	}
	return cfgs, inputs, states, nil
}

// Measure implements measure.Measurer. In both modes it checks that a graph
// replay gives the eager step's bytes (unless graphs are off); in Benchmark
// mode it also times the step: GPU time with events around each step (the
// median), host time per eager step and per graph replay (enqueue only,
// median of batches), kernels and bytes per step, and the copy bandwidth of
// the same process.
func (b *Backend) Measure(ctx context.Context, step measure.Step, opts measure.Options) (measure.Measurement, error) {
	s, reset, err := b.measuredStep(ctx, step)
	if err != nil {
		return measure.Measurement{}, fmt.Errorf("cuda measure: %w", err)
	}
	defer s.Close()
	eager := opts.Graphs != v1alpha1.GraphModeGraph
	graphs := opts.Graphs != v1alpha1.GraphModeEager
	m := measure.Measurement{KernelsPerStep: s.Kernels()}
	err = b.dev.Do(func(c *cuda.Ctx) error {
		if err := reset(c); err != nil {
			return err
		}
		if graphs {
			g, err := s.replayCheck(c, reset)
			if err != nil {
				return err
			}
			m.Graph = g
			graphs = g.Capturable
		}
		if s.grp != nil {
			// A misaligned group, found on the device, fails the run
			// with the group's name rather than timing garbage.
			if err := s.grp.err(c); err != nil {
				return err
			}
		}
		// A graph-only run whose step cannot be captured is timed eagerly.
		eager = eager || !graphs
		if opts.Mode != v1alpha1.JobModeBenchmark {
			return nil
		}
		return s.time(ctx, c, opts, eager, graphs, &m)
	})
	if err != nil {
		return measure.Measurement{}, fmt.Errorf("cuda measure: %w", err)
	}
	return m, nil
}

// measuredStep builds the device step of an engine step, with its inputs
// copied in, and the function that puts its delayed-scaling states back. A
// grouped quantize is one grouped step (NewGroupedStep), so that its
// launches and graph are what a training framework's would be.
func (b *Backend) measuredStep(ctx context.Context, step measure.Step) (*Step, func(*cuda.Ctx) error, error) {
	if step, ok := step.(measure.GroupedQuantize); ok {
		req := step.Request
		req.State = nil
		cfg := GroupedConfig{Request: req, Rows: step.X.Rows, Cols: step.X.Cols, Input: InputType(step.X.Data), Splits: step.Splits, EndStep: true}
		s, err := b.NewGroupedStep(ctx, cfg)
		if err != nil {
			return nil, nil, err
		}
		if err := s.SetInput(ctx, 0, step.X); err != nil {
			s.Close()
			return nil, nil, err
		}
		reset := func(c *cuda.Ctx) error {
			if s.grp.plan.Scheme != quant.DelayedScaling {
				return nil
			}
			// Every group's state at once (the initial state where none
			// is given).
			return s.grp.setStates(c, step.States)
		}
		return s, reset, nil
	}
	cfgs, inputs, states, err := stepConfigs(step)
	if err != nil {
		return nil, nil, err
	}
	s, err := b.NewStep(ctx, cfgs...)
	if err != nil {
		return nil, nil, err
	}
	for i, x := range inputs {
		if err := s.SetInput(ctx, i, x); err != nil {
			s.Close()
			return nil, nil, fmt.Errorf("tensor %d: %w", i, err)
		}
		s.parts[i].seed = cfgs[i].Request.Seed
	}
	reset := func(c *cuda.Ctx) error {
		for i, st := range states {
			if st == nil || s.parts[i].plan.Scheme != quant.DelayedScaling {
				continue
			}
			if err := s.parts[i].setState(c, st); err != nil {
				return fmt.Errorf("tensor %d: %w", i, err)
			}
		}
		return nil
	}
	return s, reset, nil
}

// replayCheck runs the step eagerly from the initial state, then resets the
// state, captures the step and replays it once, and compares every output
// and state byte. A capture that fails is reported, not returned.
func (s *Step) replayCheck(c *cuda.Ctx, reset func(*cuda.Ctx) error) (*measure.GraphOutcome, error) {
	if err := s.enqueue(c); err != nil {
		return nil, err
	}
	want, err := s.syncSnapshot(c)
	if err != nil {
		return nil, err
	}
	if err := reset(c); err != nil {
		return nil, err
	}
	if err := s.capture(c); err != nil {
		return &measure.GraphOutcome{}, nil //nolint:nilerr // Capturable false is the answer: the step could not be captured
	}
	if err := c.LaunchGraph(s.graph, s.b.stream); err != nil {
		return nil, err
	}
	got, err := s.syncSnapshot(c)
	if err != nil {
		return nil, err
	}
	return &measure.GraphOutcome{Capturable: true, ReplayMatchesEager: bytes.Equal(got, want)}, nil
}

// syncSnapshot waits for s's stream and reads every output and state byte
// (snapshot).
func (s *Step) syncSnapshot(c *cuda.Ctx) ([]byte, error) {
	if err := c.StreamSynchronize(s.b.stream); err != nil {
		return nil, err
	}
	return s.snapshot(c)
}

// time fills the timing fields of m. It runs on the device thread.
func (s *Step) time(ctx context.Context, c *cuda.Ctx, opts measure.Options, eager, graphs bool, m *measure.Measurement) error {
	st := s.b.stream
	run := s.enqueue
	if !eager {
		run = func(c *cuda.Ctx) error { return c.LaunchGraph(s.graph, st) }
	}
	lead, err := s.b.set.NewLeadIn(c)
	if err != nil {
		return err
	}
	defer lead.Free(c)
	bw, err := copyBandwidth(c, st, lead)
	if err != nil {
		return err
	}
	m.CopyBandwidthGBps = bw
	m.PeakBandwidthGBps = s.b.dev.Info().PeakMemoryBandwidthGBps()
	m.BytesMoved = s.BytesMoved()
	e0, err := c.NewEvent()
	if err != nil {
		return err
	}
	defer c.DestroyEvent(e0)
	e1, err := c.NewEvent()
	if err != nil {
		return err
	}
	defer c.DestroyEvent(e1)
	total := opts.Warmup + opts.Iterations
	gpu := make([]float64, 0, opts.Iterations)
	for k := range total {
		// Checked now and then: the context is the run's deadline.
		if k%16 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("timing step %d: %w", k, err)
			}
		}
		if err := lead.Queue(c, st); err != nil {
			return err
		}
		if err := c.Record(e0, st); err != nil {
			return err
		}
		if err := run(c); err != nil {
			return fmt.Errorf("timing step %d: %w", k, err)
		}
		if err := c.Record(e1, st); err != nil {
			return err
		}
		if err := c.EventSynchronize(e1); err != nil {
			return fmt.Errorf("timing step %d: %w", k, err)
		}
		if k >= opts.Warmup {
			ms, err := c.ElapsedMillis(e0, e1)
			if err != nil {
				return err
			}
			gpu = append(gpu, float64(ms)*1e3)
		}
		if opts.Progress != nil {
			opts.Progress(k+1, total)
		}
	}
	if len(gpu) > 0 {
		m.GPUMicros = medianOf(gpu)
	}
	if eager {
		if m.HostEagerMicros, err = hostMicros(c, st, hostBatch, s.enqueue); err != nil {
			return fmt.Errorf("host time of eager steps: %w", err)
		}
	}
	if graphs {
		launch := func(c *cuda.Ctx) error { return c.LaunchGraph(s.graph, st) }
		if m.HostGraphMicros, err = hostMicros(c, st, hostBatch, launch); err != nil {
			return fmt.Errorf("host time of graph replays: %w", err)
		}
	}
	if g := s.grp; g != nil && g.splits.Ptr() != 0 {
		// The grouped step's payload: its split sizes, loaded into the
		// device split buffer through kernel parameters (the same values,
		// so the step's outputs stay valid).
		payload := cuda.Bytes(slices.Clone(g.host))
		load := func(c *cuda.Ctx) error { return s.b.set.CopyViaParams(c, st, g.splits, payload) }
		if m.PointerLoadMicros, err = hostMicros(c, st, hostBatch, load); err != nil {
			return fmt.Errorf("host time of the split-size payload: %w", err)
		}
	}
	return nil
}

// hostMicros is the host time of one call of fn in microseconds: the
// median over samples of the mean over a batch of calls queued back to
// back, from an idle stream. It measures enqueueing, not the GPU.
func hostMicros(c *cuda.Ctx, st cuda.Stream, batch int, fn func(*cuda.Ctx) error) (float64, error) {
	samples := make([]float64, 0, hostSamples)
	for range hostSamples {
		if err := c.StreamSynchronize(st); err != nil {
			return 0, err
		}
		t0 := time.Now()
		for range batch {
			if err := fn(c); err != nil {
				return 0, err
			}
		}
		el := time.Since(t0)
		samples = append(samples, float64(el)/float64(time.Microsecond)/float64(batch))
	}
	return medianOf(samples), c.StreamSynchronize(st)
}

// copyBandwidth is the device-to-device copy bandwidth in GB/s (10^9
// bytes per second, bytes read plus bytes written): the median of
// copyRuns copies of copyBytes timed with events, after a warm-up copy,
// each behind the same lead-in as the steps.
func copyBandwidth(c *cuda.Ctx, st cuda.Stream, lead *kernels.LeadIn) (float64, error) {
	src, err := c.Alloc(copyBytes)
	if err != nil {
		return 0, fmt.Errorf("copy bandwidth: %w", err)
	}
	defer c.Free(src)
	dst, err := c.Alloc(copyBytes)
	if err != nil {
		return 0, fmt.Errorf("copy bandwidth: %w", err)
	}
	defer c.Free(dst)
	// Never time zeros: fill the source with a pattern.
	if err := c.Memset(src, 0x5A); err != nil {
		return 0, err
	}
	e0, err := c.NewEvent()
	if err != nil {
		return 0, err
	}
	defer c.DestroyEvent(e0)
	e1, err := c.NewEvent()
	if err != nil {
		return 0, err
	}
	defer c.DestroyEvent(e1)
	var gbps []float64
	for k := range copyRuns + 1 {
		if err := lead.Queue(c, st); err != nil {
			return 0, err
		}
		if err := c.Record(e0, st); err != nil {
			return 0, err
		}
		if err := c.CopyAsync(dst, src, copyBytes, st); err != nil {
			return 0, err
		}
		if err := c.Record(e1, st); err != nil {
			return 0, err
		}
		if err := c.EventSynchronize(e1); err != nil {
			return 0, err
		}
		ms, err := c.ElapsedMillis(e0, e1)
		if err != nil {
			return 0, err
		}
		if k > 0 && ms > 0 {
			gbps = append(gbps, 2*copyBytes/(float64(ms)*1e-3)/1e9)
		}
	}
	if len(gbps) == 0 {
		return 0, fmt.Errorf("copy bandwidth: no usable timing")
	}
	return medianOf(gbps), nil
}

func medianOf(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// Baselines are a device's reference costs, which a node publishes so that
// its runs' numbers can be read against them.
type Baselines struct {
	// Launch is the host time of one launch of a one-thread kernel (median).
	Launch time.Duration
	// GraphLaunch is the host time of one launch of a single-node graph of
	// that kernel (median).
	GraphLaunch time.Duration
	// CopyBandwidthGBps is the device-to-device copy bandwidth in GB/s
	// (10^9 bytes per second, median of several runs).
	CopyBandwidthGBps float64
	// PeakBandwidthGBps is the memory's theoretical bandwidth
	// (cuda.DeviceInfo.PeakMemoryBandwidthGBps); 0 when unknown.
	PeakBandwidthGBps float64
}

// Baselines measures the device's reference costs: the host time of one
// launch of a one-thread kernel, of one launch of a single-node graph of
// it (medians over batches), and the copy bandwidth.
func (b *Backend) Baselines(ctx context.Context) (*Baselines, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := &Baselines{PeakBandwidthGBps: b.dev.Info().PeakMemoryBandwidthGBps()}
	err := b.dev.Do(func(c *cuda.Ctx) error {
		st := b.stream
		in, err := c.Alloc(4)
		if err != nil {
			return err
		}
		defer c.Free(in)
		res, err := c.Alloc(1)
		if err != nil {
			return err
		}
		defer c.Free(res)
		if err := c.Memset(in, 0x3F); err != nil {
			return err
		}
		one := func(c *cuda.Ctx) error { return b.set.ConvertF32(c, st, in, 1, res, kernels.E4M3) }
		// Warm up: module load and first-launch costs stay out.
		if _, err := hostMicros(c, st, 16, one); err != nil {
			return err
		}
		us, err := hostMicros(c, st, launchBatch, one)
		if err != nil {
			return fmt.Errorf("launch latency: %w", err)
		}
		out.Launch = time.Duration(us * float64(time.Microsecond))
		g, err := c.Capture(st, func() error { return one(c) })
		if err != nil {
			return fmt.Errorf("graph launch latency: %w", err)
		}
		defer c.DestroyGraphExec(g)
		launch := func(c *cuda.Ctx) error { return c.LaunchGraph(g, st) }
		if _, err := hostMicros(c, st, 16, launch); err != nil {
			return err
		}
		if us, err = hostMicros(c, st, launchBatch, launch); err != nil {
			return fmt.Errorf("graph launch latency: %w", err)
		}
		out.GraphLaunch = time.Duration(us * float64(time.Microsecond))
		lead, err := b.set.NewLeadIn(c)
		if err != nil {
			return err
		}
		defer lead.Free(c)
		out.CopyBandwidthGBps, err = copyBandwidth(c, st, lead)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cuda baselines on %s: %w", b.dev.Info().Name, err)
	}
	return out, nil
}
