// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/fakeagent"
)

// A Benchmark job placed only on nodes with the reference backend says so,
// with the estimated time of one run: a job sized for GPUs takes hours there
// (config/samples/benchmark-quantize.yaml on make demo without a GPU).
func TestReferenceBackendCondition(t *testing.T) {
	tests := []struct {
		name        string
		backends    []kquantv1alpha1.Backend
		job         func(ns string) *kquantv1alpha1.QuantJob
		wantMessage []string // empty: no condition
	}{{
		name:     "a GPU-sized benchmark on reference nodes",
		backends: []kquantv1alpha1.Backend{kquantv1alpha1.BackendReference, kquantv1alpha1.BackendReference},
		job: func(ns string) *kquantv1alpha1.QuantJob {
			return builders.MakeQuantJob("big", ns).Recipe("fp8").Benchmark().Level(kquantv1alpha1.LevelStandard).Shape(8192, 8192).EachNode().Obj()
		},
		wantMessage: []string{"(refb-0, refb-1) have only the pure-Go reference backend", "about 9m50s of CPU time"},
	}, {
		name:     "a quick benchmark on a reference node",
		backends: []kquantv1alpha1.Backend{kquantv1alpha1.BackendReference},
		job: func(ns string) *kquantv1alpha1.QuantJob {
			return builders.MakeQuantJob("quick", ns).Recipe("fp8").Benchmark().Level(kquantv1alpha1.LevelQuick).Shape(1024, 1024).Obj()
		},
		wantMessage: []string{"(refb-0)", "about 1s of CPU time"},
	}, {
		name:     "a benchmark with a node on the GPU",
		backends: []kquantv1alpha1.Backend{kquantv1alpha1.BackendReference, kquantv1alpha1.BackendCUDA},
		job: func(ns string) *kquantv1alpha1.QuantJob {
			return builders.MakeQuantJob("mixed", ns).Recipe("fp8").Benchmark().Shape(8192, 8192).EachNode().Obj()
		},
	}, {
		name:     "a validation on reference nodes",
		backends: []kquantv1alpha1.Backend{kquantv1alpha1.BackendReference},
		job: func(ns string) *kquantv1alpha1.QuantJob {
			return builders.MakeQuantJob("check", ns).Recipe("fp8").Shape(8192, 8192).Obj()
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			var agents []*fakeagent.Agent
			for i, b := range tt.backends {
				profile := builders.MakeGPUNodeProfile("refb-"+string(rune('0'+i))).GPUs(builders.H100, 1).Backend(b).Ready().Obj()
				agents = append(agents, fakeagent.New(s.client, profile, leaseNamespace, fakeagent.WithRunDuration(20*time.Millisecond)))
			}
			startAgents(t, agents...)
			job := tt.job(ns)
			create(t, builders.MakeQuantRecipe("fp8", ns).Obj(), job)

			got := waitForPhase(t, ns, job.Name, kquantv1alpha1.JobPhaseSucceeded)
			cond := condition(got.Status.Conditions, kquantv1alpha1.JobConditionReferenceBackend)
			if len(tt.wantMessage) == 0 {
				if cond.Type != "" {
					t.Errorf("ReferenceBackend = %+v, want no such condition", cond)
				}
				return
			}
			if cond.Status != metav1.ConditionTrue || cond.Reason != kquantv1alpha1.ReasonReferenceBackendOnly {
				t.Fatalf("ReferenceBackend = %+v, want True with reason %s", cond, kquantv1alpha1.ReasonReferenceBackendOnly)
			}
			for _, w := range tt.wantMessage {
				if !strings.Contains(cond.Message, w) {
					t.Errorf("ReferenceBackend message %q, want it to contain %q", cond.Message, w)
				}
			}
		})
	}
}
