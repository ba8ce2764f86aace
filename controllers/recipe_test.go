// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/nodelabels"
	"github.com/kquant/kquant/controllers/quantrecipe"
	"github.com/kquant/kquant/domain/supportlabels"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/fakeagent"
)

func getRecipe(t *testing.T, ns, name string) *kquantv1alpha1.QuantRecipe {
	t.Helper()
	r := &kquantv1alpha1.QuantRecipe{}
	if err := s.client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, r); err != nil {
		t.Fatal(err)
	}
	return r
}

// The recipe's status has its key, effective format and node counts, which
// follow the fleet; a recipe CEL cannot reject is reported not Ready.
func TestRecipeStatus(t *testing.T) {
	ns := newNamespace(t)
	hopper := agent("recipe-h", builders.H100, 8, fakeagent.WithLeaseDuration(2*time.Second))
	startAgents(t, hopper, agent("recipe-b", builders.B200, 8))
	create(t,
		builders.MakeQuantRecipe("mxfp8", ns).MXFP8("").Obj(),
		builders.MakeQuantRecipe("bad-epsilon", ns).AmaxEpsilon("1e999").Obj(),
	)
	eventually(t, "mxfp8's status", func() (bool, string) {
		st := getRecipe(t, ns, "mxfp8").Status
		ready := condition(st.Conditions, kquantv1alpha1.ConditionReady)
		return st.Key == "MXFP8BlockScaling/E4M3;scaleRounding=TE;twoDimensionalWeights=false" && st.Format == kquantv1alpha1.FormatE4M3 &&
				st.Nodes == kquantv1alpha1.RecipeNodeCounts{Native: 1, Emulated: 1} && ready.Status == metav1.ConditionTrue && st.ObservedGeneration == 1,
			fmt.Sprintf("%+v", st)
	})
	eventually(t, "bad-epsilon to be not Ready", func() (bool, string) {
		st := getRecipe(t, ns, "bad-epsilon").Status
		ready := condition(st.Conditions, kquantv1alpha1.ConditionReady)
		return ready.Status == metav1.ConditionFalse && ready.Reason == quantrecipe.ReasonInvalid && st.Key == "", fmt.Sprintf("%+v", ready)
	})

	// A lost node no longer counts.
	hopper.Stop()
	eventually(t, "the Hopper node to drop out of the counts", func() (bool, string) {
		st := getRecipe(t, ns, "mxfp8").Status
		return st.Nodes == kquantv1alpha1.RecipeNodeCounts{Native: 1}, fmt.Sprintf("%+v", st.Nodes)
	})
}

// Editing a recipe mid-job changes no run already created: every run keeps
// the snapshot taken when the job expanded.
func TestRecipeEditMidJobDoesNotChangeRuns(t *testing.T) {
	ns := newNamespace(t)
	startAgents(t, agent("edit-a", builders.B200, 4, fakeagent.WithRunDuration(300*time.Millisecond)))
	recipe := builders.MakeQuantRecipe("mx", ns).MXFP8(kquantv1alpha1.ScaleRoundingTE).Obj()
	create(t, recipe, builders.MakeQuantJob("steady", ns).Recipe("mx").EachGPU().MaxParallel(1).Obj())
	eventually(t, "the first run to be bound", func() (bool, string) {
		job := getJob(t, ns, "steady")
		return job.Status.Running == 1, fmt.Sprintf("%+v", job.Status)
	})
	before := runsOf(t, ns, "steady")

	recipe = getRecipe(t, ns, "mx")
	recipe.Spec.MXFP8.ScaleRounding = kquantv1alpha1.ScaleRoundingOCP
	if err := s.client.Update(t.Context(), recipe); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the recipe's new key", func() (bool, string) {
		st := getRecipe(t, ns, "mx").Status
		return st.ObservedGeneration == 2 && st.Key == "MXFP8BlockScaling/E4M3;scaleRounding=OCP;twoDimensionalWeights=false", st.Key
	})
	waitForPhase(t, ns, "steady", kquantv1alpha1.JobPhaseSucceeded)
	after := runsOf(t, ns, "steady")
	if len(after) != 4 || len(before) != 4 {
		t.Fatalf("%d runs before the edit, %d after, want 4 and 4", len(before), len(after))
	}
	for _, r := range after {
		snap := r.Spec.Recipe
		if snap.Generation != 1 || snap.Key != "MXFP8BlockScaling/E4M3;scaleRounding=TE;twoDimensionalWeights=false" || snap.Spec.MXFP8.ScaleRounding != kquantv1alpha1.ScaleRoundingTE {
			t.Errorf("run %s snapshot %+v, want generation 1 with scaleRounding TE", r.Name, snap)
		}
	}
}

// Node labels follow the profile: set from support, removed when untrue, and
// no other label touched.
func TestNodeLabelsFollowProfiles(t *testing.T) {
	a := agent("labels-a", builders.H100, 2, fakeagent.WithNode(map[string]string{"team": "research"}))
	startAgents(t, a)
	want := map[string]string{"team": "research", supportlabels.LabelFP8: "native", supportlabels.LabelFP8Block: "native", supportlabels.LabelMXFP8: "emulated", supportlabels.LabelNVFP4: "emulated"}
	waitLabels(t, "labels-a", want)
	waitForEventNote(t, metav1.NamespaceDefault, "labels-a", nodelabels.ReasonRecipeLabelsChanged, "recipe-support labels from the node's GPUNodeProfile: kquant.dev/fp8=native, kquant.dev/fp8-block=native")

	// The agent reports the GPUs unhealthy: nothing is supported any more.
	p := builders.MakeGPUNodeProfile("labels-a").GPUs(builders.H100, 2).Unhealthy(0).Unhealthy(1).Ready().Obj()
	if err := a.PublishProfile(t.Context(), p.Status); err != nil {
		t.Fatal(err)
	}
	waitLabels(t, "labels-a", map[string]string{"team": "research"})
	waitForEventNote(t, metav1.NamespaceDefault, "labels-a", nodelabels.ReasonRecipeLabelsChanged, "kquant.dev/fp8 removed, kquant.dev/fp8-block removed")
}

func waitLabels(t *testing.T, node string, want map[string]string) {
	t.Helper()
	eventually(t, "node labels", func() (bool, string) {
		n := builders.MakeNode(node).Obj()
		if err := s.client.Get(t.Context(), client.ObjectKeyFromObject(n), n); err != nil {
			return false, err.Error()
		}
		return fmt.Sprint(n.Labels) == fmt.Sprint(want), fmt.Sprint(n.Labels)
	})
}
