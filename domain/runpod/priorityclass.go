// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runpod

import (
	"cmp"
	"math"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// PriorityValue is the run pods' priority: below the default 0, so any
// ordinary pod may preempt a run pod (the run fails and is retried), and not
// below -10, the cluster autoscaler's default expendable-pods cutoff, so an
// autoscaler does not treat a running measurement as free to discard.
const PriorityValue int32 = -10

// IdlePriorityValue is the priority of idle validations' run pods (a
// QuantGatePolicy's spec.idleValidation): the lowest an int32 holds, so that
// every pod, scavenger classes below -10 included, may preempt them. They
// only use GPUs nobody wants; being below the autoscaler's expendable
// cutoff is right for them: an idle check must neither keep a node up nor
// scale one up.
const IdlePriorityValue int32 = math.MinInt32

// PriorityClass is the run pods' PriorityClass: low, and with
// preemptionPolicy Never, so a run pod never evicts anyone to start; it
// waits for a free GPU instead.
func PriorityClass(name string) *schedulingv1.PriorityClass {
	return priorityClass(cmp.Or(name, DefaultPriorityClassName), PriorityValue,
		"kquant run pods: below every ordinary pod, never preempting; they wait for a free GPU.")
}

// IdlePriorityClass is the PriorityClass of idle validations' run pods: the
// lowest priority, never preempting.
func IdlePriorityClass(name string) *schedulingv1.PriorityClass {
	return priorityClass(cmp.Or(name, DefaultIdlePriorityClassName), IdlePriorityValue,
		"kquant idle validation run pods: the lowest priority, never preempting; any pod that wants their GPU preempts them.")
}

// PriorityClassFor is the PriorityClass that run's pod takes under cfg:
// the idle one for an idle validation's run, the run pods' otherwise.
func PriorityClassFor(run *kquantv1alpha1.QuantRun, cfg Config) *schedulingv1.PriorityClass {
	if kquantv1alpha1.IsIdleValidation(run) {
		return IdlePriorityClass(cfg.IdlePriorityClassName)
	}
	return PriorityClass(cfg.PriorityClassName)
}

func priorityClass(name string, value int32, description string) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{
		TypeMeta:         metav1.TypeMeta{APIVersion: schedulingv1.SchemeGroupVersion.String(), Kind: "PriorityClass"},
		ObjectMeta:       metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/name": "kquant"}},
		Value:            value,
		GlobalDefault:    false,
		PreemptionPolicy: ptr.To(corev1.PreemptNever),
		Description:      description,
	}
}
