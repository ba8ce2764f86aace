// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package simulate

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"time"

	"k8s.io/utils/clock"

	"github.com/kquant/kquant/agent/baseline"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/capability"
)

// Runner makes up plausible results, the same for the same run on
// the same GPU model: numbers follow from the product's copy bandwidth, the
// scheme, the shapes and the input distribution, with a small deterministic
// spread per GPU. It measures nothing; it stands in for the real runner in
// tests and in simulations of large fleets.
type Runner struct {
	// Delay is how long each run pretends to take.
	Delay time.Duration
	// Clock times the delay; nil is the real clock.
	Clock clock.Clock
}

// schemeModel is how a scheme behaves in the synthetic model.
type schemeModel struct {
	outBytesPerElement float64
	// efficiency is the fraction of copy bandwidth the quantize reaches.
	efficiency float64
	kernels    int32
	// snrDB on normally distributed input; heavy tails cost per-tensor
	// scaling more than block scaling.
	snrDB, heavyTailPenaltyDB, maxAbsError float64
}

func model(s v1alpha1.Scheme, gradientE5M2 bool) schemeModel {
	m := map[v1alpha1.Scheme]schemeModel{
		v1alpha1.SchemeDelayedScaling:       {1, 0.93, 1, 31.2, 7.5, 0.125},
		v1alpha1.SchemeFloat8CurrentScaling: {1, 0.88, 3, 31.2, 7.5, 0.125},
		v1alpha1.SchemeFloat8BlockScaling:   {1.03, 0.91, 1, 31.9, 1.5, 0.0625},
		v1alpha1.SchemeMXFP8BlockScaling:    {1.03, 0.92, 1, 32.4, 1.2, 0.0625},
		v1alpha1.SchemeNVFP4BlockScaling:    {0.5625, 0.90, 2, 19.7, 0.8, 0.5},
	}[s]
	if gradientE5M2 {
		m.snrDB -= 6.1
		m.maxAbsError *= 2
	}
	return m
}

func inputBytes(d v1alpha1.DType) float64 {
	if d == v1alpha1.DTypeFP32 {
		return 4
	}
	return 2
}

// Run returns synthetic results after Delay.
func (r Runner) Run(ctx context.Context, run *v1alpha1.QuantRun, gpu v1alpha1.GPU) (*v1alpha1.RunResults, error) {
	if r.Delay > 0 {
		clk := r.Clock
		if clk == nil {
			clk = clock.RealClock{}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("synthetic run %s: %w", run.Name, ctx.Err())
		case <-clk.After(r.Delay):
		}
	}
	return Results(run, gpu), nil
}

// Results computes the results Runner returns.
func Results(run *v1alpha1.QuantRun, gpu v1alpha1.GPU) *v1alpha1.RunResults {
	recipe := run.Spec.Recipe.Spec
	support, _ := capability.Reported(&gpu, recipe.Scheme)
	res := &v1alpha1.RunResults{Backend: string(v1alpha1.BackendReference), Capability: capability.Result(support)}
	if support.Support == v1alpha1.SupportUnsupported {
		res.Verdict, res.Reason = v1alpha1.VerdictSkip, v1alpha1.VerdictReasonRecipeUnsupported
		return res
	}

	w := run.Spec.Workload
	e5m2 := recipe.Format == v1alpha1.FormatHybrid && w.TensorRole == v1alpha1.TensorRoleGradient
	m := model(recipe.Scheme, e5m2)
	copyBW := copyBandwidth(gpu)
	grouped := w.Operation == v1alpha1.OperationGroupedQuantize
	kernels := m.kernels
	if grouped {
		kernels++ // the device prefix sum of split sizes
	}
	graphs := run.Spec.Execution.Graphs
	if graphs != v1alpha1.GraphModeEager {
		res.Graph = &v1alpha1.GraphResult{Capturable: true, ReplayMatchesEager: true}
	}

	var largest int64 = -1
	worstSNR := math.Inf(1)
	for i, s := range w.Shapes {
		elements := float64(s.Rows) * float64(s.Cols)
		bytes := elements * (inputBytes(w.InputDType) + m.outBytesPerElement)
		bw := copyBW * m.efficiency * spread(gpu.UUID, run.Spec.Recipe.Name, i)
		// Small tensors cannot fill the GPU: a fixed ~1 µs floor per kernel.
		gpuMicros := bytes/(bw*1e3) + float64(kernels)
		bw = bytes / (gpuMicros * 1e3)
		snr := m.snrDB
		if w.Distribution == v1alpha1.DistributionHeavyTailed {
			snr -= m.heavyTailPenaltyDB
		}
		shape := v1alpha1.ShapeResult{
			Rows: s.Rows, Cols: s.Cols,
			Overhead: &v1alpha1.Overhead{
				HostEagerMicros: baseline.Decimal(2.3*float64(kernels), 2),
				KernelsPerStep:  kernels,
			},
			Performance: &v1alpha1.Performance{
				GPUMicros:               baseline.Decimal(gpuMicros, 2),
				BandwidthGBps:           baseline.Decimal(bw, 1),
				FractionOfCopyBandwidth: baseline.Decimal(bw/copyBW, 3),
			},
			Accuracy: &v1alpha1.Accuracy{
				SNRdB:       baseline.Decimal(snr, 2),
				MaxAbsError: strconv.FormatFloat(m.maxAbsError, 'g', -1, 64),
			},
		}
		if recipe.Scheme == v1alpha1.SchemeNVFP4BlockScaling {
			// FP4's smallest magnitude flushes about 1 in 64 normal elements.
			shape.Accuracy.FlushedToZero = int64(elements) / 64
		}
		if graphs != v1alpha1.GraphModeEager {
			shape.Overhead.HostGraphMicros = baseline.Decimal(1.6+0.01*float64(kernels), 2)
		}
		if grouped {
			shape.Overhead.PointerLoadMicros = "1.80"
		}
		res.Shapes = append(res.Shapes, shape)
		if size := s.Rows * s.Cols; size > largest {
			largest = size
			res.Overhead, res.Performance = shape.Overhead, shape.Performance
		}
		if snr < worstSNR {
			worstSNR = snr
			res.Accuracy = shape.Accuracy
		}
	}
	res.Verdict, res.Reason = verdict(run.Spec.Tolerances, worstSNR)
	return res
}

func verdict(t v1alpha1.Tolerances, snr float64) (v1alpha1.Verdict, string) {
	if t.MinSNRdB != "" {
		if minSNR, err := strconv.ParseFloat(t.MinSNRdB, 64); err == nil && snr < minSNR {
			return v1alpha1.VerdictFail, v1alpha1.VerdictReasonSNRBelowTolerance
		}
	}
	if t.RequireBitExact {
		return v1alpha1.VerdictWarn, v1alpha1.VerdictReasonBitExactNotCompared
	}
	return v1alpha1.VerdictPass, v1alpha1.VerdictReasonPass
}

// copyBandwidth is the product's if simulate knows it, else a figure for
// the architecture.
func copyBandwidth(gpu v1alpha1.GPU) float64 {
	if p, ok := LookupName(gpu.Product); ok {
		return p.CopyBandwidthGBps
	}
	switch gpu.Architecture {
	case v1alpha1.ArchitectureAmpere:
		return 1500
	case v1alpha1.ArchitectureAda:
		return 700
	case v1alpha1.ArchitectureHopper:
		return 2800
	case v1alpha1.ArchitectureBlackwell:
		return 6500
	default:
		return 500
	}
}

// spread is a deterministic factor in [0.98, 1.02] per GPU, recipe and
// shape, so that fleets show a little variance but reruns do not.
func spread(uuid, recipe string, shape int) float64 {
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "%s/%s/%d", uuid, recipe, shape)
	return 0.98 + 0.04*float64(h.Sum64()%1000)/999
}
