// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package executor

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/gpulabels"
	"github.com/kquant/kquant/internal/metricsreg"
)

// Metrics are the executor's Prometheus metrics. Each agent registers its
// own, so that several agents can live in one process with separate
// registries (tests, simulations).
type Metrics struct {
	runs      *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	bandwidth *prometheus.GaugeVec
}

// NewMetrics creates the metrics and registers them with reg; per-GPU series
// name the node and the UUID as labels says.
func NewMetrics(reg prometheus.Registerer, labels gpulabels.Names) (*Metrics, error) {
	if err := labels.Validate("recipe", metricsreg.Phase); err != nil {
		return nil, fmt.Errorf("agent metrics GPU labels: %w", err)
	}
	m := &Metrics{
		runs: metricsreg.PhaseCounter("kquant_agent_runs_total",
			"Runs this agent moved into a phase, by phase (Running, Succeeded, Failed)."),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kquant_agent_run_duration_seconds",
			Help:    "Time from Running to the end of a run, by phase reached (Succeeded, Failed).",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 16),
		}, []string{metricsreg.Phase}),
		// Base units, and dcgm-exporter's GPU labels: this was
		// kquant_agent_last_bandwidth_gbps{gpu=<UUID>,recipe}.
		bandwidth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kquant_agent_last_bandwidth_bytes_per_second",
			Help: "Bytes one step moves over its GPU time, in the last successful in-agent run on the GPU; " + labels.Help() + "; recipe (the recipe's name).",
		}, labels.Labels("recipe")),
	}
	if err := metricsreg.Register(reg, m.runs, m.duration, m.bandwidth); err != nil {
		return nil, fmt.Errorf("registering agent metrics: %w", err)
	}
	return m, nil
}

// observeBandwidth records a run's bandwidth, in GB/s as results say it, in
// bytes per second on the series of gpu (device: the run's GPU or MIG UUID)
// of node.
func (m *Metrics) observeBandwidth(node string, gpu v1alpha1.GPU, device, recipe, gbps string) {
	bw, err := strconv.ParseFloat(gbps, 64)
	if err != nil {
		return
	}
	profile, instance := "", ""
	for _, mig := range gpu.MIGDevices {
		if mig.UUID == device {
			profile = gpulabels.InstanceProfile(mig.Profile)
			if mig.GPUInstanceID != nil {
				instance = strconv.Itoa(int(*mig.GPUInstanceID))
			}
		}
	}
	m.bandwidth.WithLabelValues(node, gpu.UUID, strconv.Itoa(int(gpu.Index)), gpu.Product, profile, instance, recipe).Set(bw * 1e9)
}
