// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package apply

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/api/v1alpha1"
	ac "github.com/kquant/kquant/api/v1alpha1/applyconfiguration/api/v1alpha1"
)

// The status writers: one per kind, and every status write of kquant goes
// through one of them. Each is a server-side apply of the status
// subresource with ForceOwnership under a field manager of this package,
// conditional on the object's resourceVersion when it has one (an apply
// made from a stale read conflicts instead of overwriting newer status).
// Each returns the resourceVersion the API server gave the write and
// changes nothing in the objects it is given, which may be the cache's.
//
// A kind whose status has one writer (everything but QuantRun) is applied
// whole: a field the new status leaves out is removed, because its manager
// owned it. QuantRun status has three writers, so its writer takes only the
// caller's fields (QuantRunStatusOwners).

// QuantRunStatus applies status, the fields that manager owns by
// QuantRunStatusOwners and no others, to run.
func QuantRunStatus(ctx context.Context, c client.StatusClient, manager string, run *v1alpha1.QuantRun, status *ac.QuantRunStatusApplyConfiguration) (string, error) {
	obj := ac.QuantRun(run.Name, run.Namespace).WithStatus(status)
	return write(ctx, c, manager, obj, obj.ObjectMetaApplyConfiguration, run.ResourceVersion, "run "+run.Namespace+"/"+run.Name)
}

// QuantJobStatus applies status, the controller's whole status of job.
func QuantJobStatus(ctx context.Context, c client.StatusClient, job *v1alpha1.QuantJob, status *v1alpha1.QuantJobStatus) (string, error) {
	obj := ac.QuantJob(job.Name, job.Namespace).WithStatus(quantJobStatus(status))
	return write(ctx, c, ManagerController, obj, obj.ObjectMetaApplyConfiguration, job.ResourceVersion, "job "+job.Namespace+"/"+job.Name)
}

// QuantRecipeStatus applies status, the controller's whole status of recipe.
func QuantRecipeStatus(ctx context.Context, c client.StatusClient, recipe *v1alpha1.QuantRecipe, status *v1alpha1.QuantRecipeStatus) (string, error) {
	obj := ac.QuantRecipe(recipe.Name, recipe.Namespace).WithStatus(quantRecipeStatus(status))
	return write(ctx, c, ManagerController, obj, obj.ObjectMetaApplyConfiguration, recipe.ResourceVersion, "recipe "+recipe.Namespace+"/"+recipe.Name)
}

// ClusterQuantRecipeStatus applies status, the controller's whole status of
// recipe.
func ClusterQuantRecipeStatus(ctx context.Context, c client.StatusClient, recipe *v1alpha1.ClusterQuantRecipe, status *v1alpha1.QuantRecipeStatus) (string, error) {
	obj := ac.ClusterQuantRecipe(recipe.Name).WithStatus(quantRecipeStatus(status))
	return write(ctx, c, ManagerController, obj, obj.ObjectMetaApplyConfiguration, recipe.ResourceVersion, "cluster recipe "+recipe.Name)
}

// QuantGatePolicyStatus applies status, the controller's whole status of
// policy.
func QuantGatePolicyStatus(ctx context.Context, c client.StatusClient, policy *v1alpha1.QuantGatePolicy, status *v1alpha1.QuantGatePolicyStatus) (string, error) {
	obj := ac.QuantGatePolicy(policy.Name).WithStatus(quantGatePolicyStatus(status))
	return write(ctx, c, ManagerController, obj, obj.ObjectMetaApplyConfiguration, policy.ResourceVersion, "gate policy "+policy.Name)
}

// QuantCronJobStatus applies status, the controller's whole status of
// cronJob.
func QuantCronJobStatus(ctx context.Context, c client.StatusClient, cronJob *v1alpha1.QuantCronJob, status *v1alpha1.QuantCronJobStatus) (string, error) {
	obj := ac.QuantCronJob(cronJob.Name, cronJob.Namespace).WithStatus(quantCronJobStatus(status))
	return write(ctx, c, ManagerController, obj, obj.ObjectMetaApplyConfiguration, cronJob.ResourceVersion, "cron job "+cronJob.Namespace+"/"+cronJob.Name)
}

// GPUNodeProfileStatus applies status, the agent's whole status of profile.
// The agent is the profile's only writer and publishes what it measured, so
// it leaves profile's resourceVersion empty: the write is unconditional.
func GPUNodeProfileStatus(ctx context.Context, c client.StatusClient, profile *v1alpha1.GPUNodeProfile, status *v1alpha1.GPUNodeProfileStatus) (string, error) {
	obj := ac.GPUNodeProfile(profile.Name).WithStatus(gpuNodeProfileStatus(status))
	return write(ctx, c, ManagerAgent, obj, obj.ObjectMetaApplyConfiguration, profile.ResourceVersion, "GPUNodeProfile "+profile.Name)
}

// write applies obj, whose metadata is meta, to the status subresource under
// manager, conditional on resourceVersion when it is not empty, and returns
// the resourceVersion of the write.
func write(ctx context.Context, c client.StatusClient, manager string, obj runtime.ApplyConfiguration, meta *metav1ac.ObjectMetaApplyConfiguration, resourceVersion, what string) (string, error) {
	if resourceVersion != "" {
		meta.WithResourceVersion(resourceVersion)
	}
	// The client decodes the API server's answer into obj.
	if err := c.Status().Apply(ctx, obj, client.FieldOwner(manager), client.ForceOwnership); err != nil {
		return "", fmt.Errorf("applying status of %s: %w", what, err)
	}
	if meta.ResourceVersion == nil {
		return "", nil
	}
	return *meta.ResourceVersion, nil
}
