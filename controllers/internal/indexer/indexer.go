// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package indexer

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/gateowners"
	"github.com/kquant/kquant/controllers/internal/fleet"
	"github.com/kquant/kquant/domain/quantrun"
)

// Index keys.
const (
	// RunJobKey indexes QuantRuns by spec.jobRef.name.
	RunJobKey = "spec.jobRef.name"
	// RunNodeKey indexes QuantRuns by spec.nodeName (bound runs only).
	RunNodeKey = "spec.nodeName"
	// RunActiveGPUKey indexes active QuantRuns (bound, not finished) by GPU UUID:
	// the binder's one-run-per-GPU check.
	RunActiveGPUKey = "quantrun.activeGPU"
	// RunPhaseKey indexes QuantRuns by phase, an unset phase as Pending.
	RunPhaseKey = "quantrun.phase"
	// JobRecipeKey indexes QuantJobs by spec.recipeRef.name (by
	// ClusterRecipeIndexValue for a ClusterQuantRecipe).
	JobRecipeKey = "spec.recipeRef.name"
	// JobPhaseKey indexes QuantJobs by status.phase, an unset phase as Pending.
	JobPhaseKey = "status.phase"
	// JobCronJobKey indexes QuantJobs by the QuantCronJob that controls them.
	JobCronJobKey = "quantjob.cronjob"
	// JobGatePolicyKey indexes QuantJobs by the QuantGatePolicy that controls
	// them.
	JobGatePolicyKey = "quantjob.gatepolicy"
	// NodeGatePolicyKey indexes Nodes (metadata) by the QuantGatePolicies that
	// own a gate key on them (the kquant.dev/gate-owners record).
	NodeGatePolicyKey = "node.gatepolicy"
	// GatePolicyRecipeKey indexes QuantGatePolicies by spec.recipeRef.name.
	GatePolicyRecipeKey = "quantgatepolicy.recipe"
)

// RunJob extracts RunJobKey.
func RunJob(obj client.Object) []string {
	run, ok := obj.(*kquantv1alpha1.QuantRun)
	if !ok {
		return nil
	}
	return []string{run.Spec.JobRef.Name}
}

// RunNode extracts RunNodeKey.
func RunNode(obj client.Object) []string {
	run, ok := obj.(*kquantv1alpha1.QuantRun)
	if !ok || run.Spec.NodeName == "" {
		return nil
	}
	return []string{run.Spec.NodeName}
}

// RunActiveGPU extracts RunActiveGPUKey.
func RunActiveGPU(obj client.Object) []string {
	run, ok := obj.(*kquantv1alpha1.QuantRun)
	if !ok || !quantrun.IsActive(run) {
		return nil
	}
	return []string{run.Spec.GPUUUID}
}

// RunPhase extracts RunPhaseKey.
func RunPhase(obj client.Object) []string {
	run, ok := obj.(*kquantv1alpha1.QuantRun)
	if !ok {
		return nil
	}
	return []string{string(quantrun.Phase(run))}
}

// JobRecipe extracts JobRecipeKey.
func JobRecipe(obj client.Object) []string {
	job, ok := obj.(*kquantv1alpha1.QuantJob)
	if !ok {
		return nil
	}
	if job.Spec.RecipeRef.IsCluster() {
		return []string{ClusterRecipeIndexValue(job.Spec.RecipeRef.Name)}
	}
	return []string{job.Spec.RecipeRef.Name}
}

// ClusterRecipeIndexValue is JobRecipeKey's value for a job that references
// the ClusterQuantRecipe name; a QuantRecipe's is its plain name, which
// cannot contain "/".
func ClusterRecipeIndexValue(name string) string {
	return string(kquantv1alpha1.RecipeKindCluster) + "/" + name
}

// JobPhase extracts JobPhaseKey.
func JobPhase(obj client.Object) []string {
	job, ok := obj.(*kquantv1alpha1.QuantJob)
	if !ok {
		return nil
	}
	if job.Status.Phase == "" {
		return []string{string(kquantv1alpha1.JobPhasePending)}
	}
	return []string{string(job.Status.Phase)}
}

// JobCronJob extracts JobCronJobKey.
func JobCronJob(obj client.Object) []string {
	owner := metav1.GetControllerOf(obj)
	if owner == nil || owner.Kind != "QuantCronJob" || owner.APIVersion != kquantv1alpha1.GroupVersion.String() {
		return nil
	}
	return []string{owner.Name}
}

// JobGatePolicy extracts JobGatePolicyKey.
func JobGatePolicy(obj client.Object) []string {
	owner := metav1.GetControllerOf(obj)
	if owner == nil || owner.Kind != "QuantGatePolicy" || owner.APIVersion != kquantv1alpha1.GroupVersion.String() {
		return nil
	}
	return []string{owner.Name}
}

// NodeGatePolicy extracts NodeGatePolicyKey.
func NodeGatePolicy(obj client.Object) []string {
	return gateowners.Policies(obj.GetAnnotations())
}

// GatePolicyRecipe extracts GatePolicyRecipeKey.
func GatePolicyRecipe(obj client.Object) []string {
	p, ok := obj.(*kquantv1alpha1.QuantGatePolicy)
	if !ok {
		return nil
	}
	return []string{p.Spec.RecipeRef.Name}
}

// Setup registers every index with indexer (the manager's field indexer).
func Setup(ctx context.Context, indexer client.FieldIndexer) error {
	indexes := []struct {
		obj     client.Object
		key     string
		extract client.IndexerFunc
	}{
		{&kquantv1alpha1.QuantRun{}, RunJobKey, RunJob},
		{&kquantv1alpha1.QuantRun{}, RunNodeKey, RunNode},
		{&kquantv1alpha1.QuantRun{}, RunActiveGPUKey, RunActiveGPU},
		{&kquantv1alpha1.QuantRun{}, RunPhaseKey, RunPhase},
		{&kquantv1alpha1.QuantJob{}, JobRecipeKey, JobRecipe},
		{&kquantv1alpha1.QuantJob{}, JobPhaseKey, JobPhase},
		{&kquantv1alpha1.QuantJob{}, JobCronJobKey, JobCronJob},
		{&kquantv1alpha1.QuantJob{}, JobGatePolicyKey, JobGatePolicy},
		{fleet.NodeMetadata(), NodeGatePolicyKey, NodeGatePolicy},
		{&kquantv1alpha1.QuantGatePolicy{}, GatePolicyRecipeKey, GatePolicyRecipe},
	}
	for _, ix := range indexes {
		if err := indexer.IndexField(ctx, ix.obj, ix.key, ix.extract); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", ix.obj, ix.key, err)
		}
	}
	return nil
}
