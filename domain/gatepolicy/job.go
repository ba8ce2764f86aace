// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gatepolicy

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// JobFor is p's validation QuantJob name in namespace: the policy's
// validation settings, always mode Validation, on the policy's
// ClusterQuantRecipe.
func JobFor(p *kquantv1alpha1.QuantGatePolicy, namespace, name string) *kquantv1alpha1.QuantJob {
	v := p.Spec.Validation.DeepCopy()
	return &kquantv1alpha1.QuantJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{kquantv1alpha1.LabelGatePolicy: p.Name}},
		Spec: kquantv1alpha1.QuantJobSpec{
			RecipeRef:             kquantv1alpha1.RecipeReference{Kind: kquantv1alpha1.RecipeKindCluster, Name: p.Spec.RecipeRef.Name},
			Mode:                  kquantv1alpha1.JobModeValidation,
			Level:                 v.Level,
			Workload:              v.Workload,
			Execution:             v.Execution,
			Placement:             v.Placement,
			Tolerances:            v.Tolerances,
			ActiveDeadlineSeconds: v.ActiveDeadlineSeconds,
		},
	}
}
