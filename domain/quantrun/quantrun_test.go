// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantrun

import (
	"strings"
	"testing"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
)

func TestName(t *testing.T) {
	cases := map[string]struct {
		job           string
		slot, attempt int
		want          string
	}{
		"short name":    {job: "bench", slot: 3, attempt: 1, want: "bench-3-1"},
		"first attempt": {job: "bench", slot: 0, attempt: 0, want: "bench-0-0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Name(tc.job, tc.slot, tc.attempt); got != tc.want {
				t.Errorf("Name() = %q, want %q", got, tc.want)
			}
		})
	}
	long := strings.Repeat("a", 260)
	a, b := Name(long, 1, 0), Name(long+"b", 1, 0)
	if len(a) > maxNameLength || !strings.HasSuffix(a, "-1-0") || a == b {
		t.Errorf("Name(long) = %q (len %d), Name(long+b) = %q: want <= 253, suffix -1-0, distinct", a, len(a), b)
	}
	if v := JobLabelValue(long); len(v) > 63 {
		t.Errorf("JobLabelValue(long) has %d characters, want <= 63", len(v))
	}
}

func TestPhaseOfABoundRunIsBound(t *testing.T) {
	unbound := builders.MakeQuantRun("r", "ns", "j").Obj()
	bound := func(stored kquantv1alpha1.RunPhase) *kquantv1alpha1.QuantRun {
		r := builders.MakeQuantRun("r", "ns", "j").Bound("n", 0).Obj()
		r.Status.Phase = stored
		return r
	}
	cases := map[string]struct {
		run  *kquantv1alpha1.QuantRun
		want kquantv1alpha1.RunPhase
	}{
		"unbound, defaulted Pending":  {run: unbound, want: kquantv1alpha1.RunPhasePending},
		"unbound, no phase stored":    {run: func() *kquantv1alpha1.QuantRun { r := unbound.DeepCopy(); r.Status.Phase = ""; return r }(), want: kquantv1alpha1.RunPhasePending},
		"bound, stored Pending":       {run: bound(kquantv1alpha1.RunPhasePending), want: kquantv1alpha1.RunPhaseBound},
		"bound, no phase stored":      {run: bound(""), want: kquantv1alpha1.RunPhaseBound},
		"bound by an earlier manager": {run: bound(kquantv1alpha1.RunPhaseBound), want: kquantv1alpha1.RunPhaseBound},
		"running":                     {run: bound(kquantv1alpha1.RunPhaseRunning), want: kquantv1alpha1.RunPhaseRunning},
		"failed before binding stays Failed": {run: func() *kquantv1alpha1.QuantRun {
			r := unbound.DeepCopy()
			r.Status.Phase = kquantv1alpha1.RunPhaseFailed
			return r
		}(), want: kquantv1alpha1.RunPhaseFailed},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Phase(tc.run); got != tc.want {
				t.Errorf("Phase() = %s, want %s", got, tc.want)
			}
		})
	}
}
