// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"math"
	"strconv"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/measure"
	"github.com/kquant/kquant/internal/quant/accuracy"
)

// The API holds measured numbers as decimal strings with units in the field
// names. These are their spellings: fixed decimals where the magnitude is
// known, six significant digits for errors, which span many decades.

// formatSNR spells an SNR in dB with two decimals; an exact result (no
// noise) is "+Inf", a zero signal with noise "-Inf" (ParseFloat reads both).
func formatSNR(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func formatError(v float64) string    { return strconv.FormatFloat(v, 'g', 6, 64) }
func formatMicros(v float64) string   { return strconv.FormatFloat(v, 'f', 3, 64) }
func formatGBps(v float64) string     { return strconv.FormatFloat(v, 'f', 1, 64) }
func formatFraction(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// shapeOutcome is what the engine learned of one shape.
type shapeOutcome struct {
	shape v1alpha1.Shape
	// elements sizes the shape for the headline: rows x cols.
	elements int64
	// measured is false when the shape did not run (alignment violation).
	measured  bool
	alignment string
	metrics   accuracy.Metrics
	bitExact  *bool
	timing    measure.Measurement
}

func (o *shapeOutcome) result() v1alpha1.ShapeResult {
	r := v1alpha1.ShapeResult{Rows: o.shape.Rows, Cols: o.shape.Cols}
	if o.measured {
		r.Accuracy = accuracyResult(o.metrics, o.bitExact)
	}
	r.Overhead = overheadResult(o.timing)
	r.Performance = performanceResult(o.timing)
	return r
}

func accuracyResult(m accuracy.Metrics, bitExact *bool) *v1alpha1.Accuracy {
	return &v1alpha1.Accuracy{
		BitExactVsReference: bitExact,
		SNRdB:               formatSNR(m.SNRdB),
		MaxAbsError:         formatError(m.MaxAbsError),
		Saturated:           int64(m.Saturated),
		FlushedToZero:       int64(m.FlushedToZero),
	}
}

func overheadResult(m measure.Measurement) *v1alpha1.Overhead {
	o := v1alpha1.Overhead{KernelsPerStep: int32(m.KernelsPerStep)}
	if m.HostEagerMicros > 0 {
		o.HostEagerMicros = formatMicros(m.HostEagerMicros)
	}
	if m.HostGraphMicros > 0 {
		o.HostGraphMicros = formatMicros(m.HostGraphMicros)
	}
	if m.PointerLoadMicros > 0 {
		o.PointerLoadMicros = formatMicros(m.PointerLoadMicros)
	}
	if o == (v1alpha1.Overhead{}) {
		return nil
	}
	return &o
}

// performanceResult derives bandwidth here rather than in each backend, so
// that every backend's GB/s means the same: BytesMoved / GPUMicros, in
// decimal gigabytes (10^9), compared with the copy bandwidth of the same run
// and with the memory's theoretical peak.
func performanceResult(m measure.Measurement) *v1alpha1.Performance {
	if m.GPUMicros <= 0 {
		return nil
	}
	p := v1alpha1.Performance{GPUMicros: formatMicros(m.GPUMicros)}
	if m.BytesMoved > 0 {
		bw := float64(m.BytesMoved) / m.GPUMicros / 1e3
		p.BandwidthGBps = formatGBps(bw)
		if m.CopyBandwidthGBps > 0 {
			p.FractionOfCopyBandwidth = formatFraction(bw / m.CopyBandwidthGBps)
		}
		if m.PeakBandwidthGBps > 0 {
			p.FractionOfPeakBandwidth = formatFraction(bw / m.PeakBandwidthGBps)
		}
	}
	return &p
}

// headline returns the index of the largest measured shape (rows x cols;
// the first of equals), or -1 when none was measured.
func headline(outs []shapeOutcome) int {
	best := -1
	for i := range outs {
		if outs[i].measured && (best < 0 || outs[i].elements > outs[best].elements) {
			best = i
		}
	}
	return best
}

// worst folds the shapes' accuracy field by field: lowest SNR, largest
// error, largest counts, and bit-exact only if every compared shape is.
// ok is false when no shape was measured.
func worst(outs []shapeOutcome) (m accuracy.Metrics, bitExact *bool, ok bool) {
	m.SNRdB = math.Inf(1)
	for i := range outs {
		o := &outs[i]
		if !o.measured {
			continue
		}
		ok = true
		// A NaN SNR must win: it means something is badly wrong.
		if o.metrics.SNRdB < m.SNRdB || math.IsNaN(o.metrics.SNRdB) {
			m.SNRdB = o.metrics.SNRdB
		}
		m.MaxAbsError = max(m.MaxAbsError, o.metrics.MaxAbsError)
		m.Saturated = max(m.Saturated, o.metrics.Saturated)
		m.FlushedToZero = max(m.FlushedToZero, o.metrics.FlushedToZero)
		m.NonFinite = max(m.NonFinite, o.metrics.NonFinite)
		if o.bitExact != nil {
			v := *o.bitExact && (bitExact == nil || *bitExact)
			bitExact = &v
		}
	}
	if !ok {
		m.SNRdB = math.NaN()
	}
	return m, bitExact, ok
}

// graphOutcome folds the shapes' graph outcomes: capturable and matching
// only if every attempted shape is; nil when none was attempted.
func graphOutcome(outs []shapeOutcome) *measure.GraphOutcome {
	var g *measure.GraphOutcome
	for i := range outs {
		s := outs[i].timing.Graph
		if s == nil {
			continue
		}
		if g == nil {
			g = &measure.GraphOutcome{Capturable: true, ReplayMatchesEager: true}
		}
		g.Capturable = g.Capturable && s.Capturable
		g.ReplayMatchesEager = g.ReplayMatchesEager && s.ReplayMatchesEager
	}
	return g
}
