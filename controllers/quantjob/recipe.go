// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantjob

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/internal/indexer"
)

// resolvedRecipe is the recipe a job references, of either kind.
type resolvedRecipe struct {
	kind       kquantv1alpha1.RecipeKind
	name       string
	generation int64
	spec       kquantv1alpha1.QuantRecipeSpec
}

// describe names the recipe as a message does: "QuantRecipe fp8 in
// namespace ns" or "ClusterQuantRecipe fp8".
func describeRecipe(job *kquantv1alpha1.QuantJob) string {
	if job.Spec.RecipeRef.IsCluster() {
		return fmt.Sprintf("%s %s", kquantv1alpha1.RecipeKindCluster, job.Spec.RecipeRef.Name)
	}
	return fmt.Sprintf("%s %s in namespace %s", kquantv1alpha1.RecipeKindNamespaced, job.Spec.RecipeRef.Name, job.Namespace)
}

// getRecipe reads the recipe job references: a QuantRecipe in the job's
// namespace, or a ClusterQuantRecipe. A NotFound error is returned as is.
func (r *Reconciler) getRecipe(ctx context.Context, job *kquantv1alpha1.QuantJob) (*resolvedRecipe, error) {
	name := job.Spec.RecipeRef.Name
	if job.Spec.RecipeRef.IsCluster() {
		recipe := &kquantv1alpha1.ClusterQuantRecipe{}
		if err := r.client.Get(ctx, types.NamespacedName{Name: name}, recipe); err != nil {
			return nil, err
		}
		return &resolvedRecipe{kind: kquantv1alpha1.RecipeKindCluster, name: name, generation: recipe.Generation, spec: recipe.Spec}, nil
	}
	recipe := &kquantv1alpha1.QuantRecipe{}
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: job.Namespace, Name: name}, recipe); err != nil {
		return nil, err
	}
	return &resolvedRecipe{kind: kquantv1alpha1.RecipeKindNamespaced, name: name, generation: recipe.Generation, spec: recipe.Spec}, nil
}

// snapshot is the copy of the recipe each run carries.
func (rr *resolvedRecipe) snapshot() kquantv1alpha1.RecipeSnapshot {
	s := kquantv1alpha1.RecipeSnapshot{Name: rr.name, Generation: rr.generation, Key: rr.spec.Key(), Spec: rr.spec}
	if rr.kind == kquantv1alpha1.RecipeKindCluster {
		// Empty means QuantRecipe, as on runs written before the catalog.
		s.Kind = rr.kind
	}
	return s
}

// jobsOfClusterRecipe maps a ClusterQuantRecipe change to the jobs, in every
// namespace, that reference it and have not expanded yet.
func (r *Reconciler) jobsOfClusterRecipe(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.unexpandedJobs(ctx, obj, indexer.ClusterRecipeIndexValue(obj.GetName()))
}
