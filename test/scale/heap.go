// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
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

func get(ctx context.Context, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return resp.Body, nil
}

// gauge reads the value of an unlabelled metric from a Prometheus text
// exposition.
func gauge(r io.Reader, name string) (int64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		value, ok := strings.CutPrefix(sc.Text(), name+" ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %s %q: %w", name, value, err)
		}
		return int64(v), nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("reading metrics: %w", err)
	}
	return 0, fmt.Errorf("no %s in the metrics", name)
}
