// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package baseline

import (
	"context"
	"strconv"
	"time"

	"github.com/kquant/kquant/api/v1alpha1"
)

// Measurement is what a Prober measured on one GPU. A zero field was not
// measured and is left out of the profile.
type Measurement struct {
	// Launch is the host time of one empty kernel launch (median).
	Launch time.Duration
	// GraphLaunch is the host time of one single-node graph launch (median).
	GraphLaunch time.Duration
	// CopyBandwidthGBps is the device-to-device copy bandwidth in GB/s
	// (10^9 bytes per second, median of several runs).
	CopyBandwidthGBps float64
	// PeakBandwidthGBps is the memory's theoretical bandwidth in GB/s.
	PeakBandwidthGBps float64
}

// Prober measures baselines on a node's GPUs.
type Prober interface {
	// Backend is the backend the agent runs steps on with this prober:
	// cuda when it drives the GPUs, reference otherwise.
	Backend() v1alpha1.Backend
	// Measure measures on GPU gpuIndex. It returns nil, nil when the prober
	// has nothing to measure (no CUDA).
	Measure(ctx context.Context, gpuIndex int) (*Measurement, error)
}

// Null is the Prober of nodes without CUDA.
type Null struct{}

var _ Prober = Null{}

// Backend is reference: without CUDA, steps run on the pure-Go reference.
func (Null) Backend() v1alpha1.Backend { return v1alpha1.BackendReference }

// Measure measures nothing.
func (Null) Measure(context.Context, int) (*Measurement, error) { return nil, nil }

// API converts a measurement to the profile's decimal strings; nil for nil
// or an all-zero measurement.
func (m *Measurement) API() *v1alpha1.Baselines {
	if m == nil || (m.Launch == 0 && m.GraphLaunch == 0 && m.CopyBandwidthGBps == 0 && m.PeakBandwidthGBps == 0) {
		return nil
	}
	b := &v1alpha1.Baselines{}
	if m.Launch > 0 {
		b.LaunchMicros = Micros(m.Launch)
	}
	if m.GraphLaunch > 0 {
		b.GraphLaunchMicros = Micros(m.GraphLaunch)
	}
	if m.CopyBandwidthGBps > 0 {
		b.CopyBandwidthGBps = Decimal(m.CopyBandwidthGBps, 1)
	}
	if m.PeakBandwidthGBps > 0 {
		b.PeakBandwidthGBps = Decimal(m.PeakBandwidthGBps, 1)
	}
	return b
}

// Micros formats a duration in microseconds with two decimals, the API's
// convention for host times.
func Micros(d time.Duration) string {
	return Decimal(float64(d)/float64(time.Microsecond), 2)
}

// Decimal formats v with the given number of decimals (the API carries
// measured numbers as decimal strings, never floats).
func Decimal(v float64, decimals int) string {
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// Elsewhere is the Prober of an agent whose runs execute in run pods: the
// agent holds no CUDA context, so it measures nothing itself; Backend names
// the backend its node's run pods use.
type Elsewhere struct{ Runs v1alpha1.Backend }

var _ Prober = Elsewhere{}

// Backend is the run pods' backend.
func (e Elsewhere) Backend() v1alpha1.Backend { return e.Runs }

// Measure measures nothing: a CUDA context is the run pods' to create.
func (Elsewhere) Measure(context.Context, int) (*Measurement, error) { return nil, nil }
