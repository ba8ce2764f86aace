// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package hooks_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/hooks"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.RunPackage(m, func(e *testenv.Env) { env = e })
}

// Uninstall waits for the release's pods, then takes kquant's labels, taints and
// profiles off the cluster and leaves everything else alone.
func TestRunRemovesKquantsMarks(t *testing.T) {
	ctx := t.Context()
	c := env.Client
	ns, err := env.CreateNamespace(ctx, "uninstall")
	if err != nil {
		t.Fatal(err)
	}
	gpuNode := builders.MakeNode("uninstall-gpu").Label("kquant.dev/fp8", "native").Label("kquant.dev/mxfp8", "emulated").
		Label(kquantv1alpha1.GateLabelPrefix+"fp8", "Failed").Label("nvidia.com/gpu.present", "true").Obj()
	gpuNode.Spec.Taints = []corev1.Taint{
		{Key: "kquant.dev/validation-gate", Value: "pending", Effect: corev1.TaintEffectNoSchedule},
		{Key: kquantv1alpha1.GateLabelPrefix + "fp8", Value: "Failed", Effect: corev1.TaintEffectNoSchedule},
		{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule},
	}
	gpuNode.Annotations = map[string]string{kquantv1alpha1.AnnotationGateOwners: `{"gate.kquant.dev/fp8":{"policy":"fp8","label":true,"since":null}}`,
		kquantv1alpha1.AnnotationGateConditions: `{"kquant.dev/FP8Validated":"fp8"}`, "team": "ml"}
	plainNode := builders.MakeNode("uninstall-plain").Label("team", "ml").Obj()
	for _, o := range []client.Object{gpuNode, plainNode, builders.MakeGPUNodeProfile("uninstall-gpu").GPUs(builders.H100, 2).Obj()} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// The gate's Node condition, beside another tool's.
	gpuNode.Status.Conditions = []corev1.NodeCondition{
		{Type: "kquant.dev/FP8Validated", Status: corev1.ConditionFalse, Reason: "SNRBelowTolerance"},
		{Type: "example.com/GPUHealthy", Status: corev1.ConditionTrue, Reason: "Probed"},
	}
	if err := c.Status().Update(ctx, gpuNode); err != nil {
		t.Fatal(err)
	}
	// A manager pod of the release is still terminating: Uninstall must wait for it.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "kquant-manager-0", Namespace: ns, Labels: map[string]string{"app.kubernetes.io/instance": "kquant", "app.kubernetes.io/component": "manager"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "kquant-manager"}}},
	}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	sel, err := labels.Parse("app.kubernetes.io/instance=kquant,app.kubernetes.io/component in (manager,agent)")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- hooks.Uninstall(ctx, c, hooks.UninstallOptions{Namespace: ns, PodSelector: sel, Poll: 50 * time.Millisecond})
	}()
	select {
	case err := <-done:
		t.Fatalf("Uninstall returned while the release's pod still exists: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	if err := c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Uninstall: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Uninstall did not return after the pod was gone")
	}

	profiles := &kquantv1alpha1.GPUNodeProfileList{}
	if err := c.List(ctx, profiles); err != nil || len(profiles.Items) != 0 {
		t.Errorf("GPUNodeProfiles left: %d (%v)", len(profiles.Items), err)
	}
	got := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: "uninstall-gpu"}, got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"nvidia.com/gpu.present": "true"}, got.Labels); diff != "" {
		t.Errorf("labels after uninstall (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"team": "ml"}, got.Annotations); diff != "" {
		t.Errorf("annotations after uninstall (-want +got):\n%s", diff)
	}
	var conditions []string
	for _, cond := range got.Status.Conditions {
		conditions = append(conditions, string(cond.Type))
	}
	if diff := cmp.Diff([]string{"example.com/GPUHealthy"}, conditions); diff != "" {
		t.Errorf("conditions after uninstall (-want +got):\n%s", diff)
	}
	keys := map[string]bool{}
	for _, taint := range got.Spec.Taints {
		keys[taint.Key] = true
	}
	// (The API server's admission adds node.kubernetes.io/not-ready too.)
	if keys["kquant.dev/validation-gate"] || keys[kquantv1alpha1.GateLabelPrefix+"fp8"] || !keys["nvidia.com/gpu"] {
		t.Errorf("taints after uninstall = %v, want nvidia.com/gpu kept and kquant.dev/validation-gate and gate.kquant.dev/fp8 gone", got.Spec.Taints)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "uninstall-plain"}, got); err != nil || got.Labels["team"] != "ml" {
		t.Errorf("a node without kquant's marks changed: %v %v", got.Labels, err)
	}
}

// Uninstall gives up when its context ends while the pods stay.
func TestRunGivesUpWhilePodsStay(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	ns, err := env.CreateNamespace(t.Context(), "uninstall-stuck")
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-x", Namespace: ns, Labels: map[string]string{"app.kubernetes.io/component": "agent"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "kquant-agent"}}},
	}
	if err := env.Client.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	sel := labels.SelectorFromSet(labels.Set{"app.kubernetes.io/component": "agent"})
	if err := hooks.Uninstall(ctx, env.Client, hooks.UninstallOptions{Namespace: ns, PodSelector: sel, Poll: 50 * time.Millisecond}); err == nil {
		t.Error("Uninstall succeeded while the agent pod still exists")
	}
}
