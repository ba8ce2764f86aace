// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"testing"
	"time"

	"github.com/kquant/kquant/api/v1alpha1"
)

func TestReferenceRun(t *testing.T) {
	quick := v1alpha1.ExecutionForLevel(v1alpha1.LevelQuick, v1alpha1.Execution{})
	standard := v1alpha1.ExecutionForLevel(v1alpha1.LevelStandard, v1alpha1.Execution{})
	eager := v1alpha1.ExecutionForLevel(v1alpha1.LevelStandard, v1alpha1.Execution{Graphs: v1alpha1.GraphModeEager})
	square := func(n int64) v1alpha1.Workload {
		return v1alpha1.Workload{Operation: v1alpha1.OperationQuantize, Shapes: []v1alpha1.Shape{{Rows: n, Cols: n}}}
	}
	tests := []struct {
		name     string
		workload v1alpha1.Workload
		exec     v1alpha1.Execution
		want     time.Duration
	}{{
		// config/samples/benchmark-quick.yaml: (20+3) steps, twice, of 2^20 elements.
		name: "the demo's benchmark takes about a second", workload: square(1024), exec: quick,
		want: time.Duration(46 * 1024 * 1024 * referenceNanosPerElement),
	}, {
		// config/samples/benchmark-quantize.yaml: (200+20) steps, twice, of 2^26 elements.
		name: "the GPU benchmark takes about ten minutes a run", workload: square(8192), exec: standard,
		want: time.Duration(440 * 8192 * 8192 * referenceNanosPerElement),
	}, {
		name: "eager steps only once", workload: square(8192), exec: eager,
		want: time.Duration(220 * 8192 * 8192 * referenceNanosPerElement),
	}, {
		name:     "every shape counts",
		workload: v1alpha1.Workload{Shapes: []v1alpha1.Shape{{Rows: 1, Cols: 33}, {Rows: 256, Cols: 1024}}},
		exec:     eager,
		want:     time.Duration(220 * (33 + 256*1024) * referenceNanosPerElement),
	}, {
		name: "a linear layer quantizes its weight and multiplies",
		workload: v1alpha1.Workload{Operation: v1alpha1.OperationQuantizedLinear,
			Shapes: []v1alpha1.Shape{{Rows: 256, Cols: 512, OutFeatures: new(int64(128))}}},
		exec: eager,
		want: time.Duration(220 * ((256*512+128*512)*referenceNanosPerElement + 256*512*128*referenceNanosPerMAC)),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ReferenceRun(tt.workload, tt.exec); got != tt.want {
				t.Errorf("ReferenceRun = %v, want %v", got, tt.want)
			}
		})
	}
	if got := ReferenceRun(square(8192), standard); got < 5*time.Minute || got > 30*time.Minute {
		t.Errorf("benchmark-quantize's run on the reference backend: %v, want the order of ten minutes", got)
	}
}
