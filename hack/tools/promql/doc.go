// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package promql holds only tests: each of kquant's recording rules and
// alerts, parsed as Prometheus parses a rule file and evaluated by
// Prometheus' PromQL engine (promqltest) on series shaped like the manager's
// kquant_gpu_* metrics.
package promql
