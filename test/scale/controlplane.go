// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
)

// ControlPlanePIDs finds the running processes whose executable is
// assetsDir/name for each name (kube-apiserver, etcd): envtest does not
// expose its children's PIDs, and their CPU time tells whether the API
// server or etcd is what limits a burst.
func ControlPlanePIDs(assetsDir string, names ...string) (map[string]int, error) {
	want := map[string]string{}
	for _, n := range names {
		p, err := filepath.EvalSymlinks(filepath.Join(assetsDir, n))
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %w", n, err)
		}
		want[p] = n
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	out := map[string]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil {
			continue
		}
		if n, ok := want[exe]; ok {
			out[n] = pid
		}
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("no running %s from %s", n, assetsDir)
		}
	}
	return out, nil
}

// ProfileAPIServer takes a CPU profile of the API server for d through its
// /debug/pprof endpoint (on by default; the harness's client is an
// administrator) and writes it to path, for `go tool pprof`.
func ProfileAPIServer(ctx context.Context, c rest.Interface, d time.Duration, path string) error {
	body, err := c.Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(int(d.Seconds()))).
		Timeout(d + time.Minute).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("profiling the API server: %w", err)
	}
	if err := os.WriteFile(path, body, 0o644); err != nil {
		return fmt.Errorf("writing the API server's profile: %w", err)
	}
	return nil
}
