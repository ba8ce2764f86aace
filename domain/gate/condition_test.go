// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/gateowners"
)

func TestConditionType(t *testing.T) {
	tests := []struct{ family, want string }{
		{"fp8", "kquant.dev/FP8Validated"},
		{"fp8-block", "kquant.dev/FP8BlockValidated"},
		{"mxfp8", "kquant.dev/MXFP8Validated"},
		{"nvfp4", "kquant.dev/NVFP4Validated"},
	}
	for _, tt := range tests {
		if got := string(ConditionType(tt.family)); got != tt.want {
			t.Errorf("ConditionType(%q) = %q, want %q", tt.family, got, tt.want)
		}
	}
}

func TestPlanConditions(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(d)) }
	off := false
	typ := "kquant.dev/FP8Validated"
	pol := func(name string, created time.Duration, period time.Duration) Policy {
		return Policy{Name: name, Family: "fp8", Recipe: "fp8-current-scaling", Created: now.Add(created), Period: period,
			Actions: kquantv1alpha1.GateActions{Label: true}}
	}
	policies := func(ps ...Policy) map[string]Policy {
		out := map[string]Policy{}
		for _, p := range ps {
			out[p.Name] = p
		}
		return out
	}
	fail := Finding{Failed: true, GPU: "GPU-0", Run: "run-fail", Reason: "SNRBelowTolerance", Completed: now.Add(-time.Hour)}
	pass := Finding{GPU: "GPU-1", Run: "run-pass", Reason: "WithinTolerance", Completed: now.Add(-time.Hour)}
	held := gateowners.Owners{"gate.kquant.dev/fp8": {Policy: "a", GPU: "GPU-0", Run: "run-old", Since: at(-2 * time.Hour)}}
	trueOld := corev1.NodeCondition{Type: corev1.NodeConditionType(typ), Status: corev1.ConditionTrue, Reason: "WithinTolerance",
		Message: "old", LastHeartbeatTime: at(-3 * time.Hour), LastTransitionTime: at(-3 * time.Hour)}
	tests := []struct {
		name         string
		existing     []corev1.NodeCondition
		record       gateowners.Conditions
		owners       gateowners.Owners
		policies     map[string]Policy
		findings     map[PolicyFamily]Finding
		want         []corev1.NodeCondition // Type, Status, Reason compared; messages spot-checked
		wantRecord   gateowners.Conditions
		wantBlocked  int
		wantRequeue  time.Duration
		wantMessages []string
	}{
		{name: "a failure sets False with the run's verdict reason",
			owners: held, policies: policies(pol("a", 0, 0)), findings: map[PolicyFamily]Finding{{"a", "fp8"}: fail},
			want:         []corev1.NodeCondition{{Type: corev1.NodeConditionType(typ), Status: corev1.ConditionFalse, Reason: "SNRBelowTolerance"}},
			wantRecord:   gateowners.Conditions{typ: "a"},
			wantMessages: []string{"recipe fp8-current-scaling: GPU GPU-0 failed validation in run run-fail (policy a)"}},
		{name: "a pass sets True and comes back when it goes stale",
			policies: policies(pol("a", 0, 2*time.Hour)), findings: map[PolicyFamily]Finding{{"a", "fp8"}: pass},
			want:        []corev1.NodeCondition{{Type: corev1.NodeConditionType(typ), Status: corev1.ConditionTrue, Reason: "WithinTolerance"}},
			wantRecord:  gateowners.Conditions{typ: "a"},
			wantRequeue: time.Hour},
		{name: "a pass older than the period is Unknown",
			policies: policies(pol("a", 0, 30*time.Minute)), findings: map[PolicyFamily]Finding{{"a", "fp8"}: pass},
			want:         []corev1.NodeCondition{{Type: corev1.NodeConditionType(typ), Status: corev1.ConditionUnknown, Reason: kquantv1alpha1.NodeReasonValidationStale}},
			wantRecord:   gateowners.Conditions{typ: "a"},
			wantMessages: []string{"recipe fp8-current-scaling: not validated within the policy's period of 30m0s; the last pass was GPU GPU-1 in run run-pass at 2026-12-07T11:00:00Z (policy a)"}},
		{name: "runs gone, a True condition still goes stale",
			existing: []corev1.NodeCondition{trueOld}, record: gateowners.Conditions{typ: "a"},
			policies:   policies(pol("a", 0, time.Hour)),
			want:       []corev1.NodeCondition{{Type: corev1.NodeConditionType(typ), Status: corev1.ConditionUnknown, Reason: kquantv1alpha1.NodeReasonValidationStale}},
			wantRecord: gateowners.Conditions{typ: "a"}},
		{name: "runs gone, a held key is False from its record",
			owners: held, policies: policies(pol("a", 0, 0)),
			want:         []corev1.NodeCondition{{Type: corev1.NodeConditionType(typ), Status: corev1.ConditionFalse, Reason: kquantv1alpha1.NodeReasonValidationFailed}},
			wantRecord:   gateowners.Conditions{typ: "a"},
			wantMessages: []string{"recipe fp8-current-scaling: GPU GPU-0 failed validation in run run-old (policy a)"}},
		{name: "no runs and no condition: nothing to say", policies: policies(pol("a", 0, 0)), wantRecord: gateowners.Conditions{}},
		{name: "a policy without the condition action sets none",
			policies: policies(func() Policy { p := pol("a", 0, 0); p.Actions.Condition = &off; return p }()),
			findings: map[PolicyFamily]Finding{{"a", "fp8"}: fail}, wantRecord: gateowners.Conditions{}},
		{name: "the oldest policy of the family decides",
			policies:   policies(pol("young", 0, 0), pol("old", -time.Hour, 0)),
			findings:   map[PolicyFamily]Finding{{"young", "fp8"}: fail, {"old", "fp8"}: pass},
			want:       []corev1.NodeCondition{{Type: corev1.NodeConditionType(typ), Status: corev1.ConditionTrue, Reason: "WithinTolerance"}},
			wantRecord: gateowners.Conditions{typ: "old"}},
		{name: "someone else's condition of the type is left alone",
			existing: []corev1.NodeCondition{trueOld},
			policies: policies(pol("a", 0, 0)), findings: map[PolicyFamily]Finding{{"a", "fp8"}: fail},
			wantRecord: gateowners.Conditions{}, wantBlocked: 1},
		{name: "a gone policy's condition is dropped",
			existing: []corev1.NodeCondition{trueOld}, record: gateowners.Conditions{typ: "gone"},
			wantRecord: gateowners.Conditions{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanConditions(tt.existing, tt.record, tt.owners, tt.policies, tt.findings, now)
			type short struct{ Type, Status, Reason string }
			var gotShort, wantShort []short
			var messages []string
			for _, c := range got.Conditions {
				gotShort = append(gotShort, short{string(c.Type), string(c.Status), c.Reason})
				messages = append(messages, c.Message)
			}
			for _, c := range tt.want {
				wantShort = append(wantShort, short{string(c.Type), string(c.Status), c.Reason})
			}
			if diff := cmp.Diff(wantShort, gotShort); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRecord, got.Record); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
			if len(got.Blocked) != tt.wantBlocked {
				t.Errorf("blocked %d, want %d: %+v", len(got.Blocked), tt.wantBlocked, got.Blocked)
			}
			if got.RequeueAfter != tt.wantRequeue {
				t.Errorf("requeue after %s, want %s", got.RequeueAfter, tt.wantRequeue)
			}
			if tt.wantMessages != nil {
				if diff := cmp.Diff(tt.wantMessages, messages); diff != "" {
					t.Errorf("messages (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestPlanConditionsKeepsTransitionTime(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	typ := corev1.NodeConditionType("kquant.dev/FP8Validated")
	since := metav1.NewTime(now.Add(-time.Hour))
	old := corev1.NodeCondition{Type: typ, Status: corev1.ConditionTrue, Reason: "WithinTolerance", LastTransitionTime: since}
	policies := map[string]Policy{"a": {Name: "a", Family: "fp8", Recipe: "r"}}
	findings := map[PolicyFamily]Finding{{"a", "fp8"}: {GPU: "g", Run: "r2", Reason: "WithinTolerance", Completed: now}}
	got := PlanConditions([]corev1.NodeCondition{old}, gateowners.Conditions{string(typ): "a"}, nil, policies, findings, now)
	if len(got.Conditions) != 1 || !got.Conditions[0].LastTransitionTime.Equal(&since) || !got.Conditions[0].LastHeartbeatTime.Equal(&metav1.Time{Time: now}) {
		t.Errorf("got %+v, want the old transition time %s and a heartbeat at %s", got.Conditions, since, now)
	}
}
