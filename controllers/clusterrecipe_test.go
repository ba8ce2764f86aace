// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
)

// createClusterRecipe creates a ClusterQuantRecipe and deletes it when the
// test ends (it outlives the test's namespace).
func createClusterRecipe(t *testing.T, r *kquantv1alpha1.ClusterQuantRecipe) {
	t.Helper()
	create(t, r)
	t.Cleanup(func() { _ = s.client.Delete(t.Context(), r) })
}

// A job references the cluster's catalog instead of a namespaced recipe: it
// waits for a missing ClusterQuantRecipe, runs once it exists, and its runs
// snapshot it; the catalog entry gets a QuantRecipe's status and admission.
func TestClusterRecipeCatalog(t *testing.T) {
	ns := newNamespace(t)
	startAgents(t, agent("catalog-h", builders.H100, 2))
	// A namespaced recipe of the same name must not be taken for the catalog's.
	create(t, builders.MakeQuantRecipe("catalog-fp8", ns).Power2Scales(true).Obj(),
		builders.MakeQuantJob("from-catalog", ns).ClusterRecipe("catalog-fp8").EachGPU().Obj())

	eventually(t, "the job to wait for its ClusterQuantRecipe", func() (bool, string) {
		sched := condition(getJob(t, ns, "from-catalog").Status.Conditions, kquantv1alpha1.JobConditionScheduled)
		return sched.Reason == kquantv1alpha1.ReasonRecipeNotFound && strings.Contains(sched.Message, "ClusterQuantRecipe catalog-fp8 not found"), fmt.Sprintf("%+v", sched)
	})

	createClusterRecipe(t, builders.MakeQuantRecipe("catalog-fp8", "").ClusterObj())
	waitForPhase(t, ns, "from-catalog", kquantv1alpha1.JobPhaseSucceeded)
	for _, r := range runsOf(t, ns, "from-catalog") {
		snap := r.Spec.Recipe
		if snap.Kind != kquantv1alpha1.RecipeKindCluster || snap.Name != "catalog-fp8" || snap.Spec.CurrentScaling != nil && snap.Spec.CurrentScaling.Power2Scales != nil && *snap.Spec.CurrentScaling.Power2Scales {
			t.Errorf("run %s snapshot = %s %s %+v, want the ClusterQuantRecipe's", r.Name, snap.Kind, snap.Name, snap.Spec)
		}
	}

	eventually(t, "the ClusterQuantRecipe's status", func() (bool, string) {
		cqr := &kquantv1alpha1.ClusterQuantRecipe{}
		if err := s.client.Get(t.Context(), client.ObjectKey{Name: "catalog-fp8"}, cqr); err != nil {
			return false, err.Error()
		}
		ready := condition(cqr.Status.Conditions, kquantv1alpha1.ConditionReady)
		return ready.Status == metav1.ConditionTrue && cqr.Status.Key != "" && cqr.Status.Nodes.Native == 1, fmt.Sprintf("%+v", cqr.Status)
	})

	// The CRD carries QuantRecipe's admission rules.
	bad := builders.MakeQuantRecipe("catalog-bad", "").NVFP4().Format(kquantv1alpha1.FormatHybrid).ClusterObj()
	if err := s.client.Create(t.Context(), bad); err == nil {
		_ = s.client.Delete(t.Context(), bad)
		t.Error("a ClusterQuantRecipe with NVFP4 and format HYBRID was admitted")
	}
}
