// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package metricsreg

import "github.com/prometheus/client_golang/prometheus"

// Phase is the label of every series split by a QuantRun's or QuantJob's
// phase, in the manager and in the agent alike, so that one PromQL matcher
// reads both.
const Phase = "phase"

// PhaseCounter is a counter named name with one series per phase entered.
func PhaseCounter(name, help string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{Phase})
}

// Register registers every collector with reg and stops at the first
// error, which it returns unwrapped for the caller to name its metrics.
func Register(reg prometheus.Registerer, collectors ...prometheus.Collector) error {
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
