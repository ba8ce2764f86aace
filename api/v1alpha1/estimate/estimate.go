// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"time"

	"github.com/kquant/kquant/api/v1alpha1"
)

const (
	// referenceNanosPerElement is the reference backend's CPU time to
	// quantize one input element in one step: about 23 ns measured with
	// kquantctl run (fp8-current-scaling, 1024x1024, usage Both, the Quick
	// level) on one core of a busy 2-core x86 machine. The block-scaled and
	// NVFP4 recipes are within a factor of two of it.
	referenceNanosPerElement = 20
	// referenceNanosPerMAC is the cost of one multiply-accumulate of
	// QuantizedLinear's reference GEMM, a plain Go loop.
	referenceNanosPerMAC = 1
)

// ReferenceRun is about how long one run of workload w takes on the
// reference backend, executed as exec says: the execution a run carries
// (v1alpha1.ExecutionForLevel fills in what the job leaves out). Every step,
// warm-up included, quantizes every shape once; Both graphs runs the steps
// twice, eagerly and as a graph replay.
func ReferenceRun(w v1alpha1.Workload, exec v1alpha1.Execution) time.Duration {
	var perStep int64
	for _, s := range w.Shapes {
		perStep += s.Rows * s.Cols * referenceNanosPerElement
		if w.Operation == v1alpha1.OperationQuantizedLinear {
			n := s.Cols
			if s.OutFeatures != nil {
				n = *s.OutFeatures
			}
			// The weight is quantized too, and the product computed.
			perStep += n*s.Cols*referenceNanosPerElement + s.Rows*s.Cols*n*referenceNanosPerMAC
		}
	}
	var steps int64
	if exec.Iterations != nil {
		steps += int64(*exec.Iterations)
	}
	if exec.Warmup != nil {
		steps += int64(*exec.Warmup)
	}
	if exec.Graphs == v1alpha1.GraphModeBoth {
		steps *= 2
	}
	return time.Duration(perStep * steps)
}
