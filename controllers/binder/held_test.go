// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package binder

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
)

func TestHeldGPUs(t *testing.T) {
	run := func(name, gpu string, phase kquantv1alpha1.RunPhase) *kquantv1alpha1.QuantRun {
		r := builders.MakeQuantRun(name, "ns", "j").Phase(phase).Obj()
		r.Spec.GPUUUID = gpu
		return r
	}
	type step struct {
		add, update *kquantv1alpha1.QuantRun
		remove      any
	}
	cases := map[string]struct {
		steps     []step
		wantHeld  []string
		wantFree  []string
		wantBound []string
		// wantWaiting: whether a run other than those assumed waits.
		wantWaiting bool
		assumed     []string
	}{
		"an unbound run holds nothing and waits": {
			steps:       []step{{add: run("r", "", kquantv1alpha1.RunPhasePending)}},
			wantFree:    []string{"GPU-a-0"},
			wantWaiting: true,
		},
		"an unbound run being bound by a pass does not wait": {
			steps:   []step{{add: run("r", "", kquantv1alpha1.RunPhasePending)}},
			assumed: []string{"r"},
		},
		"a run no longer waits once bound": {
			steps:     []step{{add: run("r", "", kquantv1alpha1.RunPhasePending)}, {update: run("r", "GPU-a-0", kquantv1alpha1.RunPhasePending)}},
			wantHeld:  []string{"GPU-a-0"},
			wantBound: []string{"r"},
		},
		"a deleted unbound run no longer waits": {
			steps: []step{{add: run("r", "", kquantv1alpha1.RunPhasePending)}, {remove: run("r", "", kquantv1alpha1.RunPhasePending)}},
		},
		"a bound run holds its GPU until it finishes": {
			steps:     []step{{add: run("r", "GPU-a-0", kquantv1alpha1.RunPhasePending)}, {update: run("r", "GPU-a-0", kquantv1alpha1.RunPhaseRunning)}},
			wantHeld:  []string{"GPU-a-0"},
			wantBound: []string{"r"},
		},
		"a finished run frees its GPU and stays seen": {
			steps: []step{{add: run("r", "GPU-a-0", kquantv1alpha1.RunPhaseRunning)},
				{update: run("r", "GPU-a-0", kquantv1alpha1.RunPhaseSucceeded)}},
			wantFree:  []string{"GPU-a-0"},
			wantBound: []string{"r"},
		},
		"a deleted run is forgotten": {
			steps:    []step{{add: run("r", "GPU-a-0", kquantv1alpha1.RunPhaseRunning)}, {remove: run("r", "GPU-a-0", kquantv1alpha1.RunPhaseRunning)}},
			wantFree: []string{"GPU-a-0"},
		},
		"a deletion seen late is forgotten too": {
			steps: []step{{add: run("r", "GPU-a-0", kquantv1alpha1.RunPhaseRunning)},
				{remove: toolscache.DeletedFinalStateUnknown{Key: "ns/r", Obj: run("r", "GPU-a-0", kquantv1alpha1.RunPhaseRunning)}}},
			wantFree: []string{"GPU-a-0"},
		},
		"one run's end does not free another's GPU": {
			steps: []step{{add: run("r1", "GPU-a-0", kquantv1alpha1.RunPhaseRunning)}, {add: run("r2", "GPU-a-0", kquantv1alpha1.RunPhasePending)},
				{update: run("r1", "GPU-a-0", kquantv1alpha1.RunPhaseFailed)}},
			wantHeld:  []string{"GPU-a-0"},
			wantBound: []string{"r1", "r2"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHeldGPUs()
			for _, s := range tc.steps {
				switch {
				case s.add != nil:
					h.observe(s.add)
				case s.update != nil:
					h.observe(s.update)
				default:
					h.remove(s.remove)
				}
			}
			for _, g := range tc.wantHeld {
				if !h.held(g) {
					t.Errorf("held(%s) = false, want true", g)
				}
			}
			for _, g := range tc.wantFree {
				if h.held(g) {
					t.Errorf("held(%s) = true, want false", g)
				}
			}
			for _, n := range tc.wantBound {
				if !h.seenBound(types.NamespacedName{Namespace: "ns", Name: n}) {
					t.Errorf("seenBound(%s) = false, want true", n)
				}
			}
			assumed := map[types.NamespacedName]assumption{}
			for _, n := range tc.assumed {
				assumed[types.NamespacedName{Namespace: "ns", Name: n}] = assumption{}
			}
			if got := h.anyWaitingBut(assumed); got != tc.wantWaiting {
				t.Errorf("anyWaitingBut() = %v, want %v", got, tc.wantWaiting)
			}
			if len(h.bound) != len(tc.wantBound) {
				t.Errorf("%d runs seen bound, want %d", len(h.bound), len(tc.wantBound))
			}
		})
	}
}
