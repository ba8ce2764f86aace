package gate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	label := kquantv1alpha1.Gate{Label: true}
	taint := kquantv1alpha1.Gate{Taint: corev1.TaintEffectPreferNoSchedule}
	strong := kquantv1alpha1.Gate{Label: true, Taint: corev1.TaintEffectNoExecute}
	obs := func(family, gpu string, min int, v kquantv1alpha1.Verdict, g kquantv1alpha1.Gate) Observation {
		return Observation{Family: family, GPU: gpu, Completed: t0.Add(time.Duration(min) * time.Minute), Run: family + gpu, Verdict: v, Gate: g}
	}
	tests := []struct {
		name string
		obs  []Observation
		want map[string]State
	}{
		{name: "nothing observed leaves every family alone", want: map[string]State{}},
		{name: "a failure gates with the job's label", obs: []Observation{obs("fp8", "g0", 0, kquantv1alpha1.VerdictFail, label)},
			want: map[string]State{"fp8": {Failed: true, Label: true}}},
		{name: "a later pass on the same GPU clears", obs: []Observation{
			obs("fp8", "g0", 0, kquantv1alpha1.VerdictFail, label), obs("fp8", "g0", 1, kquantv1alpha1.VerdictPass, label)},
			want: map[string]State{"fp8": {}}},
		{name: "an earlier pass does not clear", obs: []Observation{
			obs("fp8", "g0", 1, kquantv1alpha1.VerdictFail, label), obs("fp8", "g0", 0, kquantv1alpha1.VerdictPass, label)},
			want: map[string]State{"fp8": {Failed: true, Label: true}}},
		{name: "a pass on another GPU does not clear", obs: []Observation{
			obs("fp8", "g0", 0, kquantv1alpha1.VerdictFail, label), obs("fp8", "g1", 1, kquantv1alpha1.VerdictPass, label)},
			want: map[string]State{"fp8": {Failed: true, Label: true}}},
		{name: "Warn passes, Skip says nothing", obs: []Observation{
			obs("fp8", "g0", 0, kquantv1alpha1.VerdictFail, label), obs("fp8", "g0", 1, kquantv1alpha1.VerdictWarn, label),
			obs("mxfp8", "g0", 2, kquantv1alpha1.VerdictSkip, label)},
			want: map[string]State{"fp8": {}}},
		{name: "the strongest taint and any label of the failing runs", obs: []Observation{
			obs("nvfp4", "g0", 0, kquantv1alpha1.VerdictFail, taint), obs("nvfp4", "g1", 0, kquantv1alpha1.VerdictFail, strong)},
			want: map[string]State{"nvfp4": {Failed: true, Label: true, Taint: corev1.TaintEffectNoExecute}}},
		{name: "families are separate", obs: []Observation{
			obs("fp8", "g0", 0, kquantv1alpha1.VerdictFail, taint), obs("mxfp8", "g0", 1, kquantv1alpha1.VerdictPass, label)},
			want: map[string]State{"fp8": {Failed: true, Taint: corev1.TaintEffectPreferNoSchedule}, "mxfp8": {}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Decide(tt.obs)); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChanges(t *testing.T) {
	other := corev1.Taint{Key: "example.com/x", Effect: corev1.TaintEffectNoSchedule}
	gated := corev1.Taint{Key: "gate.kquant.dev/fp8", Value: "failed", Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name        string
		labels      map[string]string
		taints      []corev1.Taint
		states      map[string]State
		wantLabels  map[string]any
		wantTaints  []corev1.Taint
		wantChanged bool
	}{
		{name: "gate a clean node", labels: map[string]string{"kquant.dev/fp8": "native"}, taints: []corev1.Taint{other},
			states:     map[string]State{"fp8": {Failed: true, Label: true, Taint: corev1.TaintEffectNoSchedule}},
			wantLabels: map[string]any{"gate.kquant.dev/fp8": "failed"}, wantTaints: []corev1.Taint{other, gated}, wantChanged: true},
		{name: "already gated: nothing to do", labels: map[string]string{"gate.kquant.dev/fp8": "failed"}, taints: []corev1.Taint{other, gated},
			states:     map[string]State{"fp8": {Failed: true, Label: true, Taint: corev1.TaintEffectNoSchedule}},
			wantLabels: map[string]any{}, wantTaints: []corev1.Taint{other, gated}},
		{name: "clear keeps the others' taints", labels: map[string]string{"gate.kquant.dev/fp8": "failed"}, taints: []corev1.Taint{gated, other},
			states:     map[string]State{"fp8": {}},
			wantLabels: map[string]any{"gate.kquant.dev/fp8": nil}, wantTaints: []corev1.Taint{other}, wantChanged: true},
		{name: "a new effect replaces the old", taints: []corev1.Taint{gated},
			states:     map[string]State{"fp8": {Failed: true, Taint: corev1.TaintEffectNoExecute}},
			wantLabels: map[string]any{}, wantTaints: []corev1.Taint{{Key: gated.Key, Value: "failed", Effect: corev1.TaintEffectNoExecute}}, wantChanged: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			labels, taints, changed := Changes(tt.labels, tt.taints, tt.states)
			if diff := cmp.Diff(tt.wantLabels, labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantTaints, taints); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
			if changed != tt.wantChanged {
				t.Errorf("changed %v, want %v", changed, tt.wantChanged)
			}
		})
	}
}

func TestTolerationsCoverEveryFamily(t *testing.T) {
	got := Tolerations()
	if len(got) != 4 || got[0].Key != "gate.kquant.dev/fp8" || got[0].Operator != corev1.TolerationOpExists || got[0].Effect != "" {
		t.Errorf("tolerations %+v", got)
	}
}
