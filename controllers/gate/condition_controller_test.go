// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gate_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	gatedomain "github.com/kquant/kquant/domain/gate"
	"github.com/kquant/kquant/test/builders"
)

// waitCondition waits until node has condition typ with status and reason
// and a message containing every one of parts, and returns the node's
// conditions.
func waitCondition(t *testing.T, node string, typ corev1.NodeConditionType, status corev1.ConditionStatus, reason string, parts ...string) []corev1.NodeCondition {
	t.Helper()
	n := &corev1.Node{}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err := c.Get(t.Context(), types.NamespacedName{Name: node}, n); err != nil {
			t.Fatal(err)
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == typ && cond.Status == status && cond.Reason == reason && containsAll(cond.Message, parts) {
				return n.Status.Conditions
			}
		}
	}
	t.Fatalf("node %s: no condition %s=%s (%s) naming %q; have %+v", node, typ, status, reason, parts, n.Status.Conditions)
	return nil
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// setForeignCondition gives node a condition of another tool, which no
// gate may touch.
func setForeignCondition(t *testing.T, node string, cond corev1.NodeCondition) {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Get(t.Context(), types.NamespacedName{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = append(n.Status.Conditions, cond)
	if err := c.Status().Update(t.Context(), n); err != nil {
		t.Fatal(err)
	}
}

func TestConditionFollowsValidation(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	node := "cond-node-1"
	typ := gatedomain.ConditionType("fp8")
	foreign := corev1.NodeCondition{Type: "example.com/GPUHealthy", Status: corev1.ConditionTrue, Reason: "Probed",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}
	create(t, builders.MakeNode(node).Obj())
	setForeignCondition(t, node, foreign)
	policy := builders.MakeQuantGatePolicy("cond-1", "fp8-current-scaling").Label(false).Obj() // condition only, the default
	policyJob(t, policy, "cond-1-1-0")
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)

	// A failure sets the condition False with the run's verdict reason, and
	// its message names the recipe, the GPU and the run.
	finish(t, managerNS, "cond-1-1-0", "cond-1-1-0-0-0", node, 0, kquantv1alpha1.SchemeFloat8CurrentScaling, kquantv1alpha1.VerdictFail, t0)
	waitCondition(t, node, typ, corev1.ConditionFalse, "SyntheticFail", "recipe fp8-current-scaling", "GPU "+builders.GPUUUID(node, 0), "run cond-1-1-0-0-0")
	waitNode(t, node, nodeGate{labels: map[string]string{}, owners: map[string]string{kquantv1alpha1.GateLabelPrefix + "fp8": policy.Name}})
	waitEvent(t, "Node", node, gatedomain.ReasonConditionChanged, string(typ), "False")

	// A later pass clears it: True, and the other tool's condition is untouched.
	finish(t, managerNS, "cond-1-1-0", "cond-1-1-0-0-1", node, 0, kquantv1alpha1.SchemeFloat8CurrentScaling, kquantv1alpha1.VerdictPass, t0.Add(time.Minute))
	conds := waitCondition(t, node, typ, corev1.ConditionTrue, kquantv1alpha1.VerdictReasonPass, "run cond-1-1-0-0-1")
	if !hasCondition(conds, foreign.Type, foreign.Status, foreign.Reason) {
		t.Errorf("the foreign condition %s is gone or changed: %+v", foreign.Type, conds)
	}

	// The policy's deletion takes its condition away, and only its.
	if err := c.Delete(t.Context(), policy); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		n := &corev1.Node{}
		if err := c.Get(t.Context(), types.NamespacedName{Name: node}, n); err != nil {
			t.Fatal(err)
		}
		if !hasCondition(n.Status.Conditions, typ, corev1.ConditionTrue, kquantv1alpha1.VerdictReasonPass) {
			if !hasCondition(n.Status.Conditions, foreign.Type, foreign.Status, foreign.Reason) {
				t.Errorf("the foreign condition went with the policy's: %+v", n.Status.Conditions)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition %s outlived its policy: %+v", typ, n.Status.Conditions)
		}
	}
}

func TestStaleConditionIsUnknown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	node := "cond-node-2"
	typ := gatedomain.ConditionType("nvfp4")
	create(t, builders.MakeNode(node).Obj())
	// The policy re-validates every 10 minutes; the node last passed an hour
	// ago, so an old True would say nothing of today.
	policy := builders.MakeQuantGatePolicy("cond-2", "nvfp4").Label(false).Condition(true).Period(10 * time.Minute).Obj()
	policyJob(t, policy, "cond-2-1-0")
	finish(t, managerNS, "cond-2-1-0", "cond-2-1-0-0-0", node, 0, kquantv1alpha1.SchemeNVFP4BlockScaling, kquantv1alpha1.VerdictPass, time.Now().Add(-time.Hour))
	waitCondition(t, node, typ, corev1.ConditionUnknown, kquantv1alpha1.NodeReasonValidationStale, "period of 10m0s", "run cond-2-1-0-0-0")
}

func TestPersonsConditionIsNeverTaken(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	node := "cond-node-3"
	typ := gatedomain.ConditionType("mxfp8")
	// A person (or another tool) set kquant's condition type by hand.
	mine := corev1.NodeCondition{Type: typ, Status: corev1.ConditionTrue, Reason: "CheckedByHand", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}
	create(t, builders.MakeNode(node).Obj())
	setForeignCondition(t, node, mine)
	policy := builders.MakeQuantGatePolicy("cond-3", "mxfp8").Obj()
	policyJob(t, policy, "cond-3-1-0")
	finish(t, managerNS, "cond-3-1-0", "cond-3-1-0-0-0", node, 0, kquantv1alpha1.SchemeMXFP8BlockScaling, kquantv1alpha1.VerdictFail, time.Now().Add(-time.Hour))
	waitEvent(t, "QuantGatePolicy", policy.Name, gatedomain.ReasonConditionBlocked, string(typ), node)
	// The label gate is still set; the person's condition stays as it was.
	waitNode(t, node, nodeGate{labels: map[string]string{kquantv1alpha1.GateLabelPrefix + "mxfp8": "failed"}, owners: map[string]string{kquantv1alpha1.GateLabelPrefix + "mxfp8": policy.Name}})
	waitCondition(t, node, typ, corev1.ConditionTrue, "CheckedByHand")
}

func hasCondition(conds []corev1.NodeCondition, typ corev1.NodeConditionType, status corev1.ConditionStatus, reason string) bool {
	for _, c := range conds {
		if c.Type == typ && c.Status == status && c.Reason == reason {
			return true
		}
	}
	return false
}
