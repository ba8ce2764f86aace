// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/gateowners"
	"github.com/kquant/kquant/domain/gate"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/fakeagent"
)

// failGeneration1OnGPU1 fails GPU 1 in the runs of a policy's first
// generation (jobs <policy>-1-<period>) and passes everything else.
func failGeneration1OnGPU1(policy string) fakeagent.Outcome {
	return func(run *kquantv1alpha1.QuantRun) (*kquantv1alpha1.RunResults, error) {
		if *run.Spec.GPUIndex == 1 && strings.HasPrefix(run.Spec.JobRef.Name, policy+"-1-") {
			return builders.SyntheticResults("700", "10", "3.25", "12", kquantv1alpha1.VerdictFail), nil
		}
		return builders.SyntheticResults("812.5", "10", "3.25", "31.5", kquantv1alpha1.VerdictPass), nil
	}
}

// The whole manager, as SetupControllers wires it: a QuantGatePolicy's job
// runs in the manager's namespace, its failure on one GPU gates the node (the
// policy recorded as the key's owner, an Event on the Node, a line in the
// policy's status), and a spec change re-validates the node and clears it.
func TestGatePolicyGatesAndClearsANode(t *testing.T) {
	node, policy := "gatepolicy-a", "gp-fp8"
	key := kquantv1alpha1.GateLabelPrefix + "fp8"
	startAgents(t, agent(node, builders.H100, 2, fakeagent.WithNode(nil), fakeagent.WithOutcome(failGeneration1OnGPU1(policy)), fakeagent.WithRunDuration(20*time.Millisecond)))
	recipe := builders.MakeQuantRecipe("gp-fp8-current", "").ClusterObj()
	p := builders.MakeQuantGatePolicy(policy, recipe.Name).Label(true).Taint("").MinSNRdB("20").Obj()
	create(t, recipe, p)
	// The test API server has no garbage collector: the policy's jobs and
	// runs go by hand.
	t.Cleanup(func() {
		ctx := context.Background()
		for _, o := range []client.Object{p, recipe} {
			if err := s.client.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
				t.Error(err)
			}
		}
		if err := s.client.DeleteAllOf(ctx, &kquantv1alpha1.QuantJob{}, client.InNamespace(leaseNamespace), client.MatchingLabels{kquantv1alpha1.LabelGatePolicy: policy}); err != nil {
			t.Error(err)
		}
		if err := s.client.DeleteAllOf(ctx, &kquantv1alpha1.QuantRun{}, client.InNamespace(leaseNamespace), client.MatchingLabels{kquantv1alpha1.LabelNode: node}); err != nil {
			t.Error(err)
		}
	})

	gated := func(want bool) func() (bool, string) {
		return func() (bool, string) {
			n := &corev1.Node{}
			if err := s.client.Get(t.Context(), client.ObjectKey{Name: node}, n); err != nil {
				return false, err.Error()
			}
			owners, err := gateowners.Of(n.Annotations)
			if err != nil {
				return false, err.Error()
			}
			_, labelled := n.Labels[key]
			tainted := slices.ContainsFunc(n.Spec.Taints, func(tt corev1.Taint) bool { return tt.Key == key && tt.Effect == corev1.TaintEffectNoSchedule })
			owned := owners[key].Policy == policy
			return labelled == want && tainted == want && owned == want, fmt.Sprintf("label %t taint %t owned %t", labelled, tainted, owned)
		}
	}
	eventually(t, "node gated by the policy", gated(true))
	eventually(t, "the policy's status lists the gate", func() (bool, string) {
		got := &kquantv1alpha1.QuantGatePolicy{}
		if err := s.client.Get(t.Context(), client.ObjectKeyFromObject(p), got); err != nil {
			return false, err.Error()
		}
		st := got.Status
		ok := st.GatedCount == 1 && len(st.GatedNodes) == 1 && st.GatedNodes[0].Node == node &&
			st.GatedNodes[0].GPU == builders.GPUUUID(node, 1) && strings.HasPrefix(st.GatedNodes[0].Run, policy+"-1-0-") && st.JobNamespace == leaseNamespace
		return ok, fmt.Sprintf("%+v", st)
	})
	nodeEvent := func(reason string, parts ...string) func() (bool, string) {
		return func() (bool, string) {
			list := &eventsv1.EventList{}
			if err := s.client.List(t.Context(), list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
				return false, err.Error()
			}
			for _, e := range list.Items {
				if e.Regarding.Kind == "Node" && e.Regarding.Name == node && e.Reason == reason &&
					!slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(e.Note, p) }) {
					return true, ""
				}
			}
			return false, "no " + reason + " event"
		}
	}
	eventually(t, "a GateSet Event on the node", nodeEvent(gate.ReasonGateSet, policy, key, builders.GPUUUID(node, 1)))

	// A new generation re-validates every GPU, and GPU 1 passes now.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := &kquantv1alpha1.QuantGatePolicy{}
		if err := s.client.Get(t.Context(), client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		got.Spec.Validation.Tolerances.MinSNRdB = "25"
		return s.client.Update(t.Context(), got)
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "node gate cleared", gated(false))
	eventually(t, "a GateCleared Event on the node", nodeEvent(gate.ReasonGateCleared, policy, key, policy+"-2-0-"))
	eventually(t, "the policy's status lists no gate", func() (bool, string) {
		got := &kquantv1alpha1.QuantGatePolicy{}
		if err := s.client.Get(t.Context(), client.ObjectKeyFromObject(p), got); err != nil {
			return false, err.Error()
		}
		return got.Status.GatedCount == 0 && len(got.Status.GatedNodes) == 0 && got.Status.LastJob == policy+"-2-0", fmt.Sprintf("%+v", got.Status)
	})
}
