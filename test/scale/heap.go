// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"context"
	"fmt"
	"io"
	"os"
)

// liveHeapMetric is the Go collector's heap in use by reachable and
// not-yet-swept objects; read right after a forced collection it is the
// live heap.
const liveHeapMetric = "go_memstats_heap_alloc_bytes"

// ManagerHeap takes a heap profile of the manager through its
// net/http/pprof endpoint at pprofAddr, with a garbage collection first
// (gc=1), writes it to path for `go tool pprof`, and returns the live heap
// in bytes that its metrics at metricsAddr report right after that
// collection. The peak RSS says what a scenario cost at its worst, garbage
// included; the live heap says what the manager keeps per run.
func ManagerHeap(ctx context.Context, pprofAddr, metricsAddr, path string) (int64, error) {
	profile, err := get(ctx, "http://"+pprofAddr+"/debug/pprof/heap?gc=1")
	if err != nil {
		return 0, fmt.Errorf("profiling the manager's heap: %w", err)
	}
	defer profile.Close()
	f, err := os.Create(path)
	if err != nil {
		return 0, fmt.Errorf("writing the manager's heap profile: %w", err)
	}
	if _, err := io.Copy(f, profile); err != nil {
		_ = f.Close()
		return 0, fmt.Errorf("writing the manager's heap profile: %w", err)
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("writing the manager's heap profile: %w", err)
	}
	metrics, err := get(ctx, "http://"+metricsAddr+"/metrics")
	if err != nil {
		return 0, fmt.Errorf("scraping the manager's heap: %w", err)
	}
	defer metrics.Close()
	return gauge(metrics, liveHeapMetric)
}

// gauge reads the value of an unlabelled metric from a Prometheus text
// exposition.
func gauge(r io.Reader, name string) (int64, error) {
	var v float64
	found := false
	if err := eachSample(r, []string{name + " "}, func(_, _ string, x float64) { v, found = x, true }); err != nil {
		return 0, fmt.Errorf("reading metrics: %w", err)
	}
	if !found {
		return 0, fmt.Errorf("no %s in the metrics", name)
	}
	return int64(v), nil
}
