// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/gateowners"
)

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	obs := func(policy, family, gpu string, minutes int, v kquantv1alpha1.Verdict) Observation {
		return Observation{Policy: policy, Family: family, GPU: gpu, Completed: t0.Add(time.Duration(minutes) * time.Minute), Run: policy + "-" + family + "-" + gpu, Verdict: v}
	}
	pf := func(policy, family string) PolicyFamily { return PolicyFamily{policy, family} }
	tests := []struct {
		name string
		obs  []Observation
		want map[PolicyFamily]Finding
	}{
		{name: "nothing observed leaves every family alone", want: map[PolicyFamily]Finding{}},
		{name: "a failure names its GPU and run", obs: []Observation{obs("p", "fp8", "g0", 0, kquantv1alpha1.VerdictFail)},
			want: map[PolicyFamily]Finding{pf("p", "fp8"): {Failed: true, GPU: "g0", Run: "p-fp8-g0"}}},
		{name: "a later pass on the same GPU clears", obs: []Observation{
			obs("p", "fp8", "g0", 0, kquantv1alpha1.VerdictFail), obs("p", "fp8", "g0", 1, kquantv1alpha1.VerdictPass)},
			want: map[PolicyFamily]Finding{pf("p", "fp8"): {GPU: "g0", Run: "p-fp8-g0"}}},
		{name: "an earlier pass does not clear", obs: []Observation{
			{Policy: "p", Family: "fp8", GPU: "g0", Completed: t0.Add(time.Minute), Run: "late", Verdict: kquantv1alpha1.VerdictFail},
			{Policy: "p", Family: "fp8", GPU: "g0", Completed: t0, Run: "early", Verdict: kquantv1alpha1.VerdictPass}},
			want: map[PolicyFamily]Finding{pf("p", "fp8"): {Failed: true, GPU: "g0", Run: "late"}}},
		{name: "a pass on another GPU does not clear", obs: []Observation{
			obs("p", "fp8", "g0", 0, kquantv1alpha1.VerdictFail), obs("p", "fp8", "g1", 1, kquantv1alpha1.VerdictPass)},
			want: map[PolicyFamily]Finding{pf("p", "fp8"): {Failed: true, GPU: "g0", Run: "p-fp8-g0"}}},
		{name: "the latest failing GPU is the cause", obs: []Observation{
			obs("p", "fp8", "g0", 0, kquantv1alpha1.VerdictFail), obs("p", "fp8", "g1", 2, kquantv1alpha1.VerdictFail), obs("p", "fp8", "g2", 3, kquantv1alpha1.VerdictPass)},
			want: map[PolicyFamily]Finding{pf("p", "fp8"): {Failed: true, GPU: "g1", Run: "p-fp8-g1"}}},
		{name: "Warn passes, Skip says nothing", obs: []Observation{
			obs("p", "fp8", "g0", 0, kquantv1alpha1.VerdictFail), obs("p", "fp8", "g0", 1, kquantv1alpha1.VerdictWarn),
			obs("p", "mxfp8", "g0", 2, kquantv1alpha1.VerdictSkip)},
			want: map[PolicyFamily]Finding{pf("p", "fp8"): {GPU: "g0", Run: "p-fp8-g0"}}},
		{name: "one policy's pass never clears another's failure", obs: []Observation{
			obs("strict", "fp8", "g0", 0, kquantv1alpha1.VerdictFail), obs("lenient", "fp8", "g0", 1, kquantv1alpha1.VerdictPass)},
			want: map[PolicyFamily]Finding{pf("strict", "fp8"): {Failed: true, GPU: "g0", Run: "strict-fp8-g0"}, pf("lenient", "fp8"): {GPU: "g0", Run: "lenient-fp8-g0"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Decide(tt.obs), cmpopts.IgnoreFields(Finding{}, "Completed")); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanNode(t *testing.T) {
	now := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	since := metav1.NewTime(now.Add(-time.Hour))
	key := "gate.kquant.dev/fp8"
	other := corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoSchedule}
	gated := func(e corev1.TaintEffect) corev1.Taint { return corev1.Taint{Key: key, Value: "failed", Effect: e} }
	labelAndTaint := kquantv1alpha1.GateActions{Label: true, Taint: &kquantv1alpha1.GateTaint{}}
	older, younger := now.Add(-48*time.Hour), now.Add(-24*time.Hour)
	fail := Finding{Failed: true, GPU: "GPU-0", Run: "run-fail"}
	pass := Finding{GPU: "GPU-0", Run: "run-pass"}
	held := gateowners.Owner{Policy: "a", Label: true, Taint: corev1.TaintEffectNoSchedule, GPU: "GPU-0", Run: "run-old", Since: since}
	type want struct {
		labels  map[string]any
		taints  []corev1.Taint
		owners  gateowners.Owners
		changes []string // reason/policy
		blocked []string
		write   bool
	}
	tests := []struct {
		name     string
		node     Node
		policies map[string]Policy
		findings map[PolicyFamily]Finding
		want     want
	}{
		{
			name: "a failure gates a free key with the default NoSchedule taint and records the owner",
			node: Node{Taints: []corev1.Taint{other}}, policies: map[string]Policy{"a": {Name: "a", Actions: labelAndTaint}},
			findings: map[PolicyFamily]Finding{{"a", "fp8"}: fail},
			want: want{labels: map[string]any{key: "failed"}, taints: []corev1.Taint{other, gated(corev1.TaintEffectNoSchedule)},
				owners:  gateowners.Owners{key: {Policy: "a", Label: true, Taint: corev1.TaintEffectNoSchedule, GPU: "GPU-0", Run: "run-fail", Since: metav1.NewTime(now)}},
				changes: []string{"GateSet/a"}, write: true},
		},
		{
			name: "NoExecute only when the policy names it",
			node: Node{}, policies: map[string]Policy{"a": {Name: "a", Actions: kquantv1alpha1.GateActions{Taint: &kquantv1alpha1.GateTaint{Effect: corev1.TaintEffectNoExecute}}}},
			findings: map[PolicyFamily]Finding{{"a", "fp8"}: fail},
			want: want{labels: map[string]any{}, taints: []corev1.Taint{gated(corev1.TaintEffectNoExecute)},
				owners:  gateowners.Owners{key: {Policy: "a", Taint: corev1.TaintEffectNoExecute, GPU: "GPU-0", Run: "run-fail", Since: metav1.NewTime(now)}},
				changes: []string{"GateSet/a"}, write: true},
		},
		{
			name: "a person's label is never taken over: blocked, nothing written",
			node: Node{Labels: map[string]string{key: "failed"}}, policies: map[string]Policy{"a": {Name: "a", Actions: labelAndTaint}},
			findings: map[PolicyFamily]Finding{{"a", "fp8"}: fail},
			want:     want{labels: map[string]any{}, owners: gateowners.Owners{}, blocked: []string{"GateBlocked/a"}},
		},
		{
			name: "a person's taint of the key blocks too",
			node: Node{Taints: []corev1.Taint{gated(corev1.TaintEffectPreferNoSchedule)}}, policies: map[string]Policy{"a": {Name: "a", Actions: labelAndTaint}},
			findings: map[PolicyFamily]Finding{{"a", "fp8"}: fail},
			want:     want{labels: map[string]any{}, taints: []corev1.Taint{gated(corev1.TaintEffectPreferNoSchedule)}, owners: gateowners.Owners{}, blocked: []string{"GateBlocked/a"}},
		},
		{
			name: "a pass clears only what the owner set, and keeps a person's taint",
			node: Node{Labels: map[string]string{key: "failed"}, Taints: []corev1.Taint{gated(corev1.TaintEffectNoSchedule), gated(corev1.TaintEffectPreferNoSchedule)},
				Owners: gateowners.Owners{key: held}},
			policies: map[string]Policy{"a": {Name: "a", Actions: labelAndTaint}}, findings: map[PolicyFamily]Finding{{"a", "fp8"}: pass},
			want: want{labels: map[string]any{key: nil}, taints: []corev1.Taint{gated(corev1.TaintEffectPreferNoSchedule)}, owners: gateowners.Owners{},
				changes: []string{"GateCleared/a"}, write: true},
		},
		{
			name:     "another policy's pass does not clear the owner's gate",
			node:     Node{Labels: map[string]string{key: "failed"}, Taints: []corev1.Taint{gated(corev1.TaintEffectNoSchedule)}, Owners: gateowners.Owners{key: held}},
			policies: map[string]Policy{"a": {Name: "a", Actions: labelAndTaint}, "b": {Name: "b", Actions: labelAndTaint}},
			findings: map[PolicyFamily]Finding{{"b", "fp8"}: pass},
			want:     want{labels: map[string]any{}, taints: []corev1.Taint{gated(corev1.TaintEffectNoSchedule)}, owners: gateowners.Owners{key: held}},
		},
		{
			name:     "a second policy failing on a held key is blocked, not fighting",
			node:     Node{Labels: map[string]string{key: "failed"}, Taints: []corev1.Taint{gated(corev1.TaintEffectNoSchedule)}, Owners: gateowners.Owners{key: held}},
			policies: map[string]Policy{"a": {Name: "a", Actions: labelAndTaint}, "b": {Name: "b", Actions: kquantv1alpha1.GateActions{Taint: &kquantv1alpha1.GateTaint{Effect: corev1.TaintEffectNoExecute}}}},
			findings: map[PolicyFamily]Finding{{"a", "fp8"}: fail, {"b", "fp8"}: fail},
			want:     want{labels: map[string]any{}, taints: []corev1.Taint{gated(corev1.TaintEffectNoSchedule)}, owners: gateowners.Owners{key: held}, blocked: []string{"GateBlocked/b"}},
		},
		{
			name:     "on a free key the older of two failing policies wins",
			node:     Node{},
			policies: map[string]Policy{"young": {Name: "young", Created: younger, Actions: labelAndTaint}, "old": {Name: "old", Created: older, Actions: kquantv1alpha1.GateActions{Label: true}}},
			findings: map[PolicyFamily]Finding{{"young", "fp8"}: fail, {"old", "fp8"}: fail},
			want: want{labels: map[string]any{key: "failed"}, owners: gateowners.Owners{key: {Policy: "old", Label: true, GPU: "GPU-0", Run: "run-fail", Since: metav1.NewTime(now)}},
				changes: []string{"GateSet/old"}, blocked: []string{"GateBlocked/young"}, write: true},
		},
		{
			name:     "a released key passes to the next failing policy in one write",
			node:     Node{Labels: map[string]string{key: "failed"}, Taints: []corev1.Taint{gated(corev1.TaintEffectNoSchedule)}, Owners: gateowners.Owners{key: held}},
			policies: map[string]Policy{"a": {Name: "a", Actions: labelAndTaint}, "b": {Name: "b", Actions: kquantv1alpha1.GateActions{Label: true}}},
			findings: map[PolicyFamily]Finding{{"a", "fp8"}: pass, {"b", "fp8"}: fail},
			want: want{labels: map[string]any{key: "failed"}, taints: []corev1.Taint{},
				owners:  gateowners.Owners{key: {Policy: "b", Label: true, GPU: "GPU-0", Run: "run-fail", Since: metav1.NewTime(now)}},
				changes: []string{"GateCleared/a", "GateSet/b"}, write: true},
		},
		{
			name:     "a deleted policy's gates go",
			node:     Node{Labels: map[string]string{key: "failed"}, Taints: []corev1.Taint{other, gated(corev1.TaintEffectNoSchedule)}, Owners: gateowners.Owners{key: held}},
			policies: map[string]Policy{},
			want:     want{labels: map[string]any{key: nil}, taints: []corev1.Taint{other}, owners: gateowners.Owners{}, changes: []string{"GateCleared/a"}, write: true},
		},
		{
			name:     "a key of a family the policy no longer validates is released",
			node:     Node{Labels: map[string]string{key: "failed"}, Taints: []corev1.Taint{gated(corev1.TaintEffectNoSchedule)}, Owners: gateowners.Owners{key: held}},
			policies: map[string]Policy{"a": {Name: "a", Actions: labelAndTaint, Family: "mxfp8"}},
			findings: map[PolicyFamily]Finding{{"a", "fp8"}: fail},
			want:     want{labels: map[string]any{key: nil}, taints: []corev1.Taint{}, owners: gateowners.Owners{}, changes: []string{"GateCleared/a"}, write: true},
		},
		{
			name:     "old runs of a family the policy no longer validates claim nothing",
			node:     Node{},
			policies: map[string]Policy{"a": {Name: "a", Actions: labelAndTaint, Family: "mxfp8"}},
			findings: map[PolicyFamily]Finding{{"a", "fp8"}: fail},
			want:     want{labels: map[string]any{}, owners: gateowners.Owners{}},
		},
		{
			name:     "a held gate without runs left stays as it is",
			node:     Node{Labels: map[string]string{key: "failed"}, Taints: []corev1.Taint{gated(corev1.TaintEffectNoSchedule)}, Owners: gateowners.Owners{key: held}},
			policies: map[string]Policy{"a": {Name: "a", Actions: labelAndTaint}},
			want:     want{labels: map[string]any{}, taints: []corev1.Taint{gated(corev1.TaintEffectNoSchedule)}, owners: gateowners.Owners{key: held}},
		},
		{
			name:     "a gate label removed by hand while the failure stands comes back",
			node:     Node{Taints: []corev1.Taint{gated(corev1.TaintEffectNoSchedule)}, Owners: gateowners.Owners{key: held}},
			policies: map[string]Policy{"a": {Name: "a", Actions: labelAndTaint}}, findings: map[PolicyFamily]Finding{{"a", "fp8"}: fail},
			want: want{labels: map[string]any{key: "failed"}, taints: []corev1.Taint{gated(corev1.TaintEffectNoSchedule)}, owners: gateowners.Owners{key: held},
				changes: []string{"GateUpdated/a"}, write: true},
		},
		{
			name:     "changed actions change the owner's marks: label dropped, taint NoExecute",
			node:     Node{Labels: map[string]string{key: "failed"}, Taints: []corev1.Taint{gated(corev1.TaintEffectNoSchedule)}, Owners: gateowners.Owners{key: held}},
			policies: map[string]Policy{"a": {Name: "a", Actions: kquantv1alpha1.GateActions{Taint: &kquantv1alpha1.GateTaint{Effect: corev1.TaintEffectNoExecute}}}},
			findings: map[PolicyFamily]Finding{{"a", "fp8"}: fail},
			want: want{labels: map[string]any{key: nil}, taints: []corev1.Taint{gated(corev1.TaintEffectNoExecute)},
				owners:  gateowners.Owners{key: {Policy: "a", Taint: corev1.TaintEffectNoExecute, GPU: "GPU-0", Run: "run-old", Since: since}},
				changes: []string{"GateUpdated/a"}, write: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := PlanNode(tt.node, tt.policies, tt.findings, now)
			reasons := func(cs []Change) []string {
				var out []string
				for _, c := range cs {
					out = append(out, c.Reason+"/"+c.Policy)
				}
				return out
			}
			got := want{labels: p.Labels, taints: p.Taints, owners: p.Owners, changes: reasons(p.Changes), blocked: reasons(p.Blocked), write: p.Write}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(want{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("PlanNode (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanMessagesNamePolicyGPUAndRun(t *testing.T) {
	p := PlanNode(Node{}, map[string]Policy{"fp8-nightly": {Name: "fp8-nightly", Actions: kquantv1alpha1.GateActions{Label: true}}},
		map[PolicyFamily]Finding{{"fp8-nightly", "fp8"}: {Failed: true, GPU: "GPU-7", Run: "fp8-nightly-1-0-3-0"}}, time.Now())
	want := "policy fp8-nightly set gate.kquant.dev/fp8 (label): GPU GPU-7 failed validation in run fp8-nightly-1-0-3-0"
	if len(p.Changes) != 1 || p.Changes[0].Message != want {
		t.Errorf("changes %+v, want one with message %q", p.Changes, want)
	}
}

func TestTolerationsCoverEveryFamily(t *testing.T) {
	got := Tolerations()
	if len(got) != 4 || got[0].Key != "gate.kquant.dev/fp8" || got[0].Operator != corev1.TolerationOpExists || got[0].Effect != "" {
		t.Errorf("tolerations %+v", got)
	}
}
