// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"time"
)

// ControllerStats is what controller-runtime counts about one controller in
// the manager's /metrics: enough to tell whether its workers, rather than
// the API server, limit a scenario.
type ControllerStats struct {
	// Workers is controller_runtime_max_concurrent_reconciles.
	Workers float64
	// Reconciles is controller_runtime_reconcile_total over every result.
	Reconciles float64
	// BusySeconds is controller_runtime_reconcile_time_seconds_sum: the time
	// its workers spent in Reconcile, waiting on the API server included.
	BusySeconds float64
	// QueuedSeconds and Dequeued are workqueue_queue_duration_seconds' sum
	// and count: how long items waited for a free worker.
	QueuedSeconds, Dequeued float64
}

// ManagerStats are the stats of every controller of the manager, by name.
type ManagerStats map[string]ControllerStats

// ScrapeManager reads the controller stats from a manager's plain-HTTP
// metrics endpoint (--metrics-secure=false).
func ScrapeManager(ctx context.Context, addr string) (ManagerStats, error) {
	body, err := get(ctx, "http://"+addr+"/metrics")
	if err != nil {
		return nil, fmt.Errorf("scraping the manager's metrics: %w", err)
	}
	defer body.Close()
	return parseManagerStats(body)
}

func parseManagerStats(r io.Reader) (ManagerStats, error) {
	out := ManagerStats{}
	// Each series adds into one field of its controller's stats; the
	// workqueue names its controller "name", controller-runtime "controller".
	series := map[string]struct {
		label string
		add   func(*ControllerStats, float64)
	}{
		"controller_runtime_max_concurrent_reconciles{":  {"controller", func(s *ControllerStats, v float64) { s.Workers += v }},
		"controller_runtime_reconcile_total{":            {"controller", func(s *ControllerStats, v float64) { s.Reconciles += v }},
		"controller_runtime_reconcile_time_seconds_sum{": {"controller", func(s *ControllerStats, v float64) { s.BusySeconds += v }},
		"workqueue_queue_duration_seconds_sum{":          {"name", func(s *ControllerStats, v float64) { s.QueuedSeconds += v }},
		"workqueue_queue_duration_seconds_count{":        {"name", func(s *ControllerStats, v float64) { s.Dequeued += v }},
	}
	err := eachSample(r, slices.Collect(maps.Keys(series)), func(prefix, labels string, v float64) {
		s := series[prefix]
		name := label(labels, s.label)
		st := out[name]
		s.add(&st, v)
		out[name] = st
	})
	if err != nil {
		return out, fmt.Errorf("reading the manager's metrics: %w", err)
	}
	return out, nil
}

// Sub returns a - b, controller by controller (Workers is a gauge: a's).
func (a ManagerStats) Sub(b ManagerStats) ManagerStats {
	out := ManagerStats{}
	for name, s := range a {
		p := b[name]
		out[name] = ControllerStats{
			Workers:       s.Workers,
			Reconciles:    s.Reconciles - p.Reconciles,
			BusySeconds:   s.BusySeconds - p.BusySeconds,
			QueuedSeconds: s.QueuedSeconds - p.QueuedSeconds,
			Dequeued:      s.Dequeued - p.Dequeued,
		}
	}
	return out
}

// Summary describes the busiest controllers over a scenario of the given
// length with n units of work (jobs or runs): reconciles per unit, mean
// busy workers of the configured ones, and the mean wait in the queue. A
// controller whose busy workers approach its configured workers while
// items wait in its queue is what limits the scenario.
func (a ManagerStats) Summary(elapsed time.Duration, n, top int) []string {
	names := make([]string, 0, len(a))
	for name, s := range a {
		if s.Reconciles > 0 {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, j int) bool { return a[names[i]].BusySeconds > a[names[j]].BusySeconds })
	if len(names) > top {
		names = names[:top]
	}
	out := make([]string, 0, len(names))
	for _, name := range names {
		s := a[name]
		wait := time.Duration(0)
		if s.Dequeued > 0 {
			wait = time.Duration(s.QueuedSeconds / s.Dequeued * float64(time.Second))
		}
		out = append(out, fmt.Sprintf("%s: %.1f reconciles per unit, %.1f of %.0f workers busy, %s mean queue wait",
			name, s.Reconciles/float64(n), s.BusySeconds/elapsed.Seconds(), s.Workers, wait.Round(time.Millisecond)))
	}
	return out
}
