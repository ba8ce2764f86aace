// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package binder

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/event"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
)

func TestRunChanged(t *testing.T) {
	waiting := builders.MakeQuantRun("r", "ns", "j").Obj()
	bound := builders.MakeQuantRun("r", "ns", "j").Bound("n", 0).Phase(kquantv1alpha1.RunPhasePending).Obj()
	with := func(r *kquantv1alpha1.QuantRun, p kquantv1alpha1.RunPhase) *kquantv1alpha1.QuantRun {
		c := r.DeepCopy()
		c.Status.Phase = p
		return c
	}
	cases := map[string]struct {
		old, new *kquantv1alpha1.QuantRun
		want     bool
	}{
		"bound":                       {old: waiting, new: bound, want: true},
		"started: its GPU stays busy": {old: bound, new: with(bound, kquantv1alpha1.RunPhaseRunning), want: false},
		"succeeded: frees its GPU":    {old: with(bound, kquantv1alpha1.RunPhaseRunning), new: with(bound, kquantv1alpha1.RunPhaseSucceeded), want: true},
		"failed while bound":          {old: bound, new: with(bound, kquantv1alpha1.RunPhaseFailed), want: true},
		"failed while waiting":        {old: waiting, new: with(waiting, kquantv1alpha1.RunPhaseFailed), want: true},
		"an annotation, nothing else": {old: bound, new: bound.DeepCopy(), want: false},
	}
	p := runChanged()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
				t.Errorf("runChanged = %v, want %v", got, tc.want)
			}
		})
	}
}
