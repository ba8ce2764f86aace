// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package executor

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the executor's Prometheus metrics. Each agent registers its
// own, so that several agents can live in one process with separate
// registries (tests, simulations).
type Metrics struct {
	runs      *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	bandwidth *prometheus.GaugeVec
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kquant_agent_runs_total",
			Help: "Runs this agent moved into a phase, by phase (Running, Succeeded, Failed).",
		}, []string{"phase"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kquant_agent_run_duration_seconds",
			Help:    "Time from Running to the end of a run, by phase reached (Succeeded, Failed).",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 16),
		}, []string{"phase"}),
		bandwidth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kquant_agent_last_bandwidth_gbps",
			Help: "Bandwidth in GB/s of the last successful run, by gpu (UUID) and recipe (QuantRecipe name).",
		}, []string{"gpu", "recipe"}),
	}
	for _, c := range []prometheus.Collector{m.runs, m.duration, m.bandwidth} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering agent metrics: %w", err)
		}
	}
	return m, nil
}
