// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantjob

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/quantrun"
	"github.com/kquant/kquant/test/builders"
)

func TestUncoveredSlots(t *testing.T) {
	// slotRun is slot i's run, targeted at GPU i of node n, bound there, and
	// executed on GPU got (-1: not said, as in-agent runs).
	slotRun := func(i, got int, phase kquantv1alpha1.RunPhase) kquantv1alpha1.QuantRun {
		w := builders.MakeQuantRun(quantrun.Name("j", i, 0), "ns", "j").Bound("n", i).Phase(phase).
			Annotation(quantrun.AnnotationSlot, strconv.Itoa(i)).Annotation(quantrun.AnnotationTargetGPU, builders.GPUUUID("n", i))
		if got >= 0 {
			w.Allocated("n", got)
		}
		return *w.Obj()
	}
	eachGPU := builders.MakeQuantJob("j", "ns").EachGPU().Obj()
	ok := kquantv1alpha1.RunPhaseSucceeded
	cases := map[string]struct {
		job  *kquantv1alpha1.QuantJob
		runs []kquantv1alpha1.QuantRun
		want []int
		// wantGPUs are the reruns' targets, when not the slots' own.
		wantGPUs []string
	}{
		"every run on its target": {
			job: eachGPU, runs: []kquantv1alpha1.QuantRun{slotRun(0, 0, ok), slotRun(1, 1, ok)},
		},
		"the kubelet swapped two GPUs: both covered": {
			job: eachGPU, runs: []kquantv1alpha1.QuantRun{slotRun(0, 1, ok), slotRun(1, 0, ok)},
		},
		"two runs on one GPU: the one off its target runs again": {
			job: eachGPU, runs: []kquantv1alpha1.QuantRun{slotRun(0, 0, ok), slotRun(1, 0, ok)},
			want: []int{1},
		},
		"both off target on one GPU: one of them runs again": {
			job: eachGPU, runs: []kquantv1alpha1.QuantRun{slotRun(0, 2, ok), slotRun(1, 2, ok), slotRun(2, 1, kquantv1alpha1.RunPhaseRunning)},
			want: []int{0},
		},
		"a duplicate whose target is still running elsewhere waits for nothing": {
			job: eachGPU, runs: []kquantv1alpha1.QuantRun{slotRun(0, 1, ok), slotRun(1, 1, kquantv1alpha1.RunPhasePending)},
		},
		"runs that did not say where they ran count on their bound GPU": {
			job: eachGPU, runs: []kquantv1alpha1.QuantRun{slotRun(0, -1, ok), slotRun(1, -1, ok)},
		},
		"a chain: slot 2 ran where slot 1 ran, GPU 0 is uncovered: slot 2 runs again, for GPU 0": {
			job: eachGPU, runs: []kquantv1alpha1.QuantRun{slotRun(0, 2, ok), slotRun(1, 1, ok), slotRun(2, 1, ok), slotRun(3, 3, ok)},
			want: []int{2}, wantGPUs: []string{builders.GPUUUID("n", 0)},
		},
		"not EachGPU": {
			job: builders.MakeQuantJob("j", "ns").AnyGPU().Obj(), runs: []kquantv1alpha1.QuantRun{slotRun(0, 0, ok), slotRun(1, 0, ok)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []int
			var gpus []string
			for _, rr := range uncoveredSlots(tc.job, slotsOf(tc.runs)) {
				got, gpus = append(got, rr.slot), append(gpus, rr.gpu)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("uncoveredSlots (-want +got):\n%s", diff)
			}
			wantGPUs := tc.wantGPUs
			if wantGPUs == nil {
				for _, i := range tc.want {
					wantGPUs = append(wantGPUs, builders.GPUUUID("n", i))
				}
			}
			if diff := cmp.Diff(wantGPUs, gpus); diff != "" {
				t.Errorf("rerun targets (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUncoveredSlotsStopAfterMaxAttempts(t *testing.T) {
	last := builders.MakeQuantRun(quantrun.Name("j", 1, MaxCoverageAttempts-1), "ns", "j").Bound("n", 1).Allocated("n", 0).
		Phase(kquantv1alpha1.RunPhaseSucceeded).Attempt(MaxCoverageAttempts-1).
		Annotation(quantrun.AnnotationSlot, "1").Annotation(quantrun.AnnotationTargetGPU, builders.GPUUUID("n", 1)).Obj()
	first := builders.MakeQuantRun(quantrun.Name("j", 0, 0), "ns", "j").Bound("n", 0).Allocated("n", 0).
		Phase(kquantv1alpha1.RunPhaseSucceeded).
		Annotation(quantrun.AnnotationSlot, "0").Annotation(quantrun.AnnotationTargetGPU, builders.GPUUUID("n", 0)).Obj()
	if got := uncoveredSlots(builders.MakeQuantJob("j", "ns").EachGPU().Obj(), slotsOf([]kquantv1alpha1.QuantRun{*first, *last})); len(got) != 0 {
		t.Errorf("uncoveredSlots = %v after %d attempts, want none", got, MaxCoverageAttempts)
	}
}
