// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gatepolicy

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
)

// TestJobFor: the job is the policy's validation on its ClusterQuantRecipe,
// always in mode Validation, labelled with the policy; editing the job does
// not edit the policy.
func TestJobFor(t *testing.T) {
	p := builders.MakeQuantGatePolicy("fp8", "fp8-current-scaling").MinSNRdB("25").Obj()
	job := JobFor(p, "kquant-system", "fp8-1-0")
	want := kquantv1alpha1.QuantJobSpec{
		RecipeRef:  kquantv1alpha1.RecipeReference{Kind: kquantv1alpha1.RecipeKindCluster, Name: "fp8-current-scaling"},
		Mode:       kquantv1alpha1.JobModeValidation,
		Level:      p.Spec.Validation.Level,
		Workload:   p.Spec.Validation.Workload,
		Placement:  p.Spec.Validation.Placement,
		Tolerances: p.Spec.Validation.Tolerances,
	}
	if diff := cmp.Diff(want, job.Spec); diff != "" {
		t.Errorf("job spec (-want +got):\n%s", diff)
	}
	if job.Name != "fp8-1-0" || job.Namespace != "kquant-system" || job.Labels[kquantv1alpha1.LabelGatePolicy] != "fp8" {
		t.Errorf("job %s/%s labels %v", job.Namespace, job.Name, job.Labels)
	}
	job.Spec.Workload.Shapes[0].Rows = 1
	if p.Spec.Validation.Workload.Shapes[0].Rows == 1 {
		t.Error("editing the job edited the policy")
	}
}
