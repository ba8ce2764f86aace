// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package builders

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// QuantGatePolicyWrapper builds a QuantGatePolicy.
type QuantGatePolicyWrapper struct{ kquantv1alpha1.QuantGatePolicy }

// MakeQuantGatePolicy starts a policy that validates the ClusterQuantRecipe
// recipe at level Quick on one 1024x1024 tensor on every GPU, and labels the
// nodes that fail.
func MakeQuantGatePolicy(name, recipe string) *QuantGatePolicyWrapper {
	return &QuantGatePolicyWrapper{kquantv1alpha1.QuantGatePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kquantv1alpha1.QuantGatePolicySpec{
			RecipeRef: kquantv1alpha1.ClusterRecipeReference{Name: recipe},
			Validation: kquantv1alpha1.GateValidation{
				Level: kquantv1alpha1.LevelQuick,
				Workload: kquantv1alpha1.Workload{
					Operation: kquantv1alpha1.OperationQuantize,
					Shapes:    []kquantv1alpha1.Shape{{Rows: 1024, Cols: 1024}},
				},
				Placement: kquantv1alpha1.Placement{Policy: kquantv1alpha1.PlacementEachGPU},
			},
			Actions: kquantv1alpha1.GateActions{Label: true},
		},
	}}
}

// Label sets actions.label.
func (w *QuantGatePolicyWrapper) Label(on bool) *QuantGatePolicyWrapper {
	w.Spec.Actions.Label = on
	return w
}

// Condition sets actions.condition.
func (w *QuantGatePolicyWrapper) Condition(on bool) *QuantGatePolicyWrapper {
	w.Spec.Actions.Condition = &on
	return w
}

// Taint sets actions.taint with effect ("" for the default, NoSchedule).
func (w *QuantGatePolicyWrapper) Taint(effect corev1.TaintEffect) *QuantGatePolicyWrapper {
	w.Spec.Actions.Taint = &kquantv1alpha1.GateTaint{Effect: effect}
	return w
}

// MinSNRdB sets validation.tolerances.minSNRdB.
func (w *QuantGatePolicyWrapper) MinSNRdB(db string) *QuantGatePolicyWrapper {
	w.Spec.Validation.Tolerances.MinSNRdB = db
	return w
}

// Period sets period.
func (w *QuantGatePolicyWrapper) Period(d time.Duration) *QuantGatePolicyWrapper {
	w.Spec.Period = &metav1.Duration{Duration: d}
	return w
}

// IdleValidation sets idleValidation: validate nodes idle for idleFor, at
// most once per interval.
func (w *QuantGatePolicyWrapper) IdleValidation(idleFor, interval time.Duration) *QuantGatePolicyWrapper {
	w.Spec.IdleValidation = &kquantv1alpha1.IdleValidation{IdleFor: metav1.Duration{Duration: idleFor},
		Interval: &metav1.Duration{Duration: interval}}
	return w
}

// Obj returns the policy.
func (w *QuantGatePolicyWrapper) Obj() *kquantv1alpha1.QuantGatePolicy { return &w.QuantGatePolicy }
