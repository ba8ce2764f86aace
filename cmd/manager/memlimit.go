// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// memoryLimitPercent is the share of the container's memory limit the Go
// collector is asked to keep the process under. Without a limit the heap
// may grow to twice what is live before a collection (GOGC=100), and at a
// fleet's scale the informers' turnover of decoded objects, garbage until
// the next collection, was most of the manager's peak RSS
// (docs/benchmarks.md, "Controller at scale"). The rest of the limit is
// headroom for what the collector does not count: the binary's mapped
// pages and memory outside Go's heap.
const memoryLimitPercent = 90

// goMemoryLimit returns the soft memory limit for the Go runtime
// (runtime/debug.SetMemoryLimit) from --memory-limit, the container's limit
// as the downward API gives it (limits.memory, in bytes), and whether there
// is one to set. GOMEMLIMIT in the environment (goMemLimitEnv) wins: the
// runtime has read it already, and someone chose it on purpose.
func goMemoryLimit(containerLimit, goMemLimitEnv string) (int64, bool, error) {
	if containerLimit == "" || goMemLimitEnv != "" {
		return 0, false, nil
	}
	q, err := resource.ParseQuantity(containerLimit)
	if err != nil {
		return 0, false, fmt.Errorf("parsing --memory-limit %q: %w", containerLimit, err)
	}
	if q.Sign() <= 0 {
		return 0, false, fmt.Errorf("--memory-limit %q: want a positive quantity", containerLimit)
	}
	return q.Value() / 100 * memoryLimitPercent, true, nil
}
