// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/gateowners"
	"github.com/kquant/kquant/domain/gate"
	"github.com/kquant/kquant/test/builders"
)

// gateKey is the gate label and taint of the fp8 family (the catalog's
// ClusterQuantRecipe fp8-current-scaling).
const gateKey = v1alpha1.GateLabelPrefix + "fp8"

// gatesKeepTrainingAway has a QuantGatePolicy validate every GPU with a
// tolerance no GPU meets (an SNR of 150 dB): the node gets the gate label and
// taint, recorded as the policy's, with an Event naming the policy, GPU and
// run, and a training pod that selects nodes without the label stays
// Pending. While the node is gated the agent and the device plugin keep
// running on it: the agent pod, deleted, comes back on the tainted node (its
// DaemonSet tolerates every gate key), and the device plugin keeps
// advertising every GPU to the kubelet. The policy's spec then changes to a
// tolerance every GPU meets: the manager re-validates the gated node (its run
// pods tolerate the gate) and clears label and taint, and the training pod is
// scheduled.
func gatesKeepTrainingAway(t *testing.T, cl *cluster) {
	ns := cl.namespace(t, "e2e-gates")
	policy := builders.MakeQuantGatePolicy("e2e-gates", "fp8-current-scaling").Label(true).Taint(corev1.TaintEffectNoSchedule).MinSNRdB("150").Obj()
	if err := cl.c.Create(t.Context(), policy); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cl.c.Delete(t.Context(), policy); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	}()
	eventually(t, 5*time.Minute, "node "+node+" gated by "+policy.Name, func() error {
		return cl.nodeGate(t, policy.Name, true)
	})
	t.Logf("after the failing validation:\n%s", cl.kubectl(t, "get", "node", node, "-L", gateKey, "-o", "custom-columns=NAME:.metadata.name,TAINTS:.spec.taints[*].key"))
	eventually(t, time.Minute, "a GateSet Event on node "+node, func() error {
		return cl.nodeEvent(t, gate.ReasonGateSet, "policy "+policy.Name, gateKey, "GPU ", "run "+policy.Name+"-1-0-")
	})
	eventually(t, time.Minute, "the policy's status lists the gate", func() error {
		p := &v1alpha1.QuantGatePolicy{}
		if err := cl.c.Get(t.Context(), client.ObjectKeyFromObject(policy), p); err != nil {
			return err
		}
		if p.Status.GatedCount != 1 || len(p.Status.GatedNodes) != 1 || p.Status.GatedNodes[0].Node != node || p.Status.GatedNodes[0].Run == "" {
			return fmt.Errorf("gatedCount %d gatedNodes %+v", p.Status.GatedCount, p.Status.GatedNodes)
		}
		return nil
	})

	training := trainingPod(ns)
	if err := cl.c.Create(t.Context(), training); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "training pod unschedulable", func() error {
		return cl.podScheduled(t, training, corev1.ConditionFalse)
	})

	// The agent and the device plugin stay. A deleted agent pod is replaced
	// on the NoSchedule-tainted node only because it tolerates the gate.
	old := cl.readyPod(t, "agent", time.Minute)
	if err := cl.c.Delete(t.Context(), &old); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "a new agent pod Ready on the gated node", func() error {
		for _, p := range cl.componentPods(t, "agent") {
			if p.UID != old.UID && p.Spec.NodeName == node && podReady(&p) {
				return nil
			}
		}
		return fmt.Errorf("no new Ready agent pod on %s", node)
	})
	if got := cl.allocatableGPUs(t); got != simulatedGPUs {
		t.Errorf("nvidia.com/gpu allocatable on the gated node = %d, want %d: the device plugin must keep serving", got, simulatedGPUs)
	}

	// Re-validate with a tolerance every GPU meets: a new generation, a new
	// job, run on the gated node, which clears the gate.
	cl.tolerateAnySNR(t, policy)
	eventually(t, 5*time.Minute, "node "+node+" gate cleared", func() error {
		return cl.nodeGate(t, policy.Name, false)
	})
	eventually(t, time.Minute, "a GateCleared Event on node "+node, func() error {
		return cl.nodeEvent(t, gate.ReasonGateCleared, "policy "+policy.Name, gateKey, "run "+policy.Name+"-2-0-")
	})
	eventually(t, 2*time.Minute, "training pod scheduled", func() error {
		return cl.podScheduled(t, training, corev1.ConditionTrue)
	})
	agent := cl.readyPod(t, "agent", time.Minute)
	if agent.Spec.NodeName != node {
		t.Errorf("agent pod on %q after the gate, want %s", agent.Spec.NodeName, node)
	}
	if got := cl.allocatableGPUs(t); got != simulatedGPUs {
		t.Errorf("nvidia.com/gpu allocatable after the gate = %d, want %d", got, simulatedGPUs)
	}
	cl.kubectl(t, "delete", "namespace", ns, "--wait=false")
}

// nodeGate checks that the node has (or has not) the fp8 gate label and
// NoSchedule taint, recorded as policy's.
func (cl *cluster) nodeGate(t *testing.T, policy string, gated bool) error {
	n := &corev1.Node{}
	if err := cl.c.Get(t.Context(), client.ObjectKey{Name: node}, n); err != nil {
		return err
	}
	_, labelled := n.Labels[gateKey]
	tainted := slices.ContainsFunc(n.Spec.Taints, func(tt corev1.Taint) bool {
		return tt.Key == gateKey && tt.Effect == corev1.TaintEffectNoSchedule
	})
	owners, err := gateowners.Of(n.Annotations)
	if err != nil {
		return err
	}
	owned := owners[gateKey].Policy == policy
	if labelled != gated || tainted != gated || owned != gated {
		return fmt.Errorf("label %t, taint %t, owned by %s %t; want %t", labelled, tainted, policy, owned, gated)
	}
	return nil
}

// nodeEvent checks for an Event of reason on the node whose note contains
// every one of parts.
func (cl *cluster) nodeEvent(t *testing.T, reason string, parts ...string) error {
	list := &eventsv1.EventList{}
	if err := cl.c.List(t.Context(), list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
		return err
	}
	var seen []string
	for _, e := range list.Items {
		if e.Regarding.Kind != "Node" || e.Regarding.Name != node {
			continue
		}
		if e.Reason == reason && !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(e.Note, p) }) {
			return nil
		}
		seen = append(seen, e.Reason+": "+e.Note)
	}
	return fmt.Errorf("no %s Event naming %q; seen %q", reason, parts, seen)
}

// allocatableGPUs is the node's allocatable nvidia.com/gpu: what the device
// plugin advertises.
func (cl *cluster) allocatableGPUs(t *testing.T) int64 {
	n := &corev1.Node{}
	if err := cl.c.Get(t.Context(), client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	q := n.Status.Allocatable[corev1.ResourceName("nvidia.com/gpu")]
	return q.Value()
}

// trainingPod is a pod that, as a training job selecting FP8 nodes would,
// requires a node without a failed FP8 validation.
func trainingPod(ns string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "training", Namespace: ns},
		Spec: corev1.PodSpec{
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: gateKey, Operator: corev1.NodeSelectorOpDoesNotExist}},
				}}},
			}},
			Containers: []corev1.Container{{Name: "train", Image: "kquant.local/pause:3.10", ImagePullPolicy: corev1.PullNever}},
		},
	}
}

// podScheduled checks the pod's PodScheduled condition.
func (cl *cluster) podScheduled(t *testing.T, pod *corev1.Pod, want corev1.ConditionStatus) error {
	p := &corev1.Pod{}
	if err := cl.c.Get(t.Context(), client.ObjectKeyFromObject(pod), p); err != nil {
		return err
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			if c.Status == want {
				return nil
			}
			return fmt.Errorf("PodScheduled %s (%s: %s)", c.Status, c.Reason, c.Message)
		}
	}
	return fmt.Errorf("no PodScheduled condition yet")
}

// conditionsReachRemediation has a QuantGatePolicy with the default action,
// the Node condition only, validate every GPU with a tolerance no GPU meets:
// the node's kquant.dev/FP8Validated turns False with the run's verdict
// reason and a message naming recipe, GPU and run, and a NodeHealthCheck-style
// reader of the docs' rule calls the node unhealthy. Re-validated with a
// tolerance every GPU meets, the condition turns True and the reader calls
// the node healthy again. The policy's deletion removes the condition.
func conditionsReachRemediation(t *testing.T, cl *cluster) {
	typ := gate.ConditionType("fp8")
	policy := builders.MakeQuantGatePolicy("e2e-conditions", "fp8-current-scaling").MinSNRdB("150").Obj()
	policy.Spec.Actions = v1alpha1.GateActions{} // the API's default: the condition alone
	if err := cl.c.Create(t.Context(), policy); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cl.c.Delete(t.Context(), policy); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	}()
	// The docs' NodeHealthCheck rule, with no waiting: the test is about the
	// condition, not NHC's clock.
	rules := []unhealthyCondition{{Type: typ, Status: corev1.ConditionFalse}, {Type: typ, Status: corev1.ConditionUnknown}}

	eventually(t, 5*time.Minute, "the NHC-style reader calls node "+node+" unhealthy", func() error {
		n := cl.node(t)
		c, unhealthy := nhcUnhealthy(n, rules, time.Now())
		if !unhealthy {
			return fmt.Errorf("healthy; conditions %+v", n.Status.Conditions)
		}
		if c.Reason == "" || !strings.Contains(c.Message, "recipe fp8-current-scaling") || !strings.Contains(c.Message, "GPU GPU-") ||
			!strings.Contains(c.Message, "run "+policy.Name+"-1-0-") {
			return fmt.Errorf("condition %s %s (%s) %q: want the verdict reason and a message naming recipe, GPU and run", c.Type, c.Status, c.Reason, c.Message)
		}
		return nil
	})
	t.Logf("after the failing validation:\n%s", cl.kubectl(t, "get", "node", node, "-o", "jsonpath={.status.conditions[?(@.type=='"+string(typ)+"')]}"))
	n := cl.node(t)
	if _, tainted := n.Labels[gateKey]; tainted || slices.ContainsFunc(n.Spec.Taints, func(tt corev1.Taint) bool { return tt.Key == gateKey }) {
		t.Errorf("a condition-only policy set the gate label or taint: labels %v taints %v", n.Labels, n.Spec.Taints)
	}
	eventually(t, time.Minute, "a ConditionChanged Event on node "+node, func() error {
		return cl.nodeEvent(t, gate.ReasonConditionChanged, string(typ), "False")
	})

	cl.tolerateAnySNR(t, policy)
	eventually(t, 5*time.Minute, "the NHC-style reader calls node "+node+" healthy again", func() error {
		n := cl.node(t)
		if c, unhealthy := nhcUnhealthy(n, rules, time.Now()); unhealthy {
			return fmt.Errorf("unhealthy: %s %s (%s) %q", c.Type, c.Status, c.Reason, c.Message)
		}
		for _, c := range n.Status.Conditions {
			if c.Type == typ && c.Status == corev1.ConditionTrue && strings.Contains(c.Message, "run "+policy.Name+"-2-0-") {
				return nil
			}
		}
		return fmt.Errorf("no %s True from generation 2; conditions %+v", typ, n.Status.Conditions)
	})

	if err := cl.c.Delete(t.Context(), policy); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the policy's condition removed from node "+node, func() error {
		for _, c := range cl.node(t).Status.Conditions {
			if c.Type == typ {
				return fmt.Errorf("still %s %s (%s)", c.Type, c.Status, c.Reason)
			}
		}
		return nil
	})
}

// tolerateAnySNR lowers policy's SNR tolerance to 1 dB, which every GPU
// meets: a new generation and a new validation. A merge patch without a
// resourceVersion, since the controller writes the policy's status
// meanwhile and an Update would conflict with it.
func (cl *cluster) tolerateAnySNR(t *testing.T, policy *v1alpha1.QuantGatePolicy) {
	t.Helper()
	patch := []byte(`{"spec":{"validation":{"tolerances":{"minSNRdB":"1"}}}}`)
	if err := cl.c.Patch(t.Context(), policy.DeepCopy(), client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
}

// unhealthyCondition is one entry of a Medik8s NodeHealthCheck's
// spec.unhealthyConditions.
type unhealthyCondition struct {
	Type     corev1.NodeConditionType
	Status   corev1.ConditionStatus
	Duration time.Duration
}

// nhcUnhealthy decides as NodeHealthCheck does: a node is unhealthy when
// one rule's condition type has had the rule's status for at least its
// duration (the rules are ORed); it returns the matching condition.
func nhcUnhealthy(n *corev1.Node, rules []unhealthyCondition, now time.Time) (corev1.NodeCondition, bool) {
	for _, r := range rules {
		for _, c := range n.Status.Conditions {
			if c.Type == r.Type && c.Status == r.Status && !c.LastTransitionTime.Add(r.Duration).After(now) {
				return c, true
			}
		}
	}
	return corev1.NodeCondition{}, false
}

// node reads the cluster's GPU node.
func (cl *cluster) node(t *testing.T) *corev1.Node {
	n := &corev1.Node{}
	if err := cl.c.Get(t.Context(), client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	return n
}
