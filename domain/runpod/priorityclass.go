// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runpod

import (
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// PriorityValue is the run pods' priority: below the default 0, so any
// ordinary pod may preempt a run pod (the run fails and is retried), and not
// below -10, the cluster autoscaler's default expendable-pods cutoff, so an
// autoscaler does not treat a running measurement as free to discard.
const PriorityValue int32 = -10

// PriorityClass is the run pods' PriorityClass: low, and with
// preemptionPolicy Never, so a run pod never evicts anyone to start; it
// waits for a free GPU instead.
func PriorityClass(name string) *schedulingv1.PriorityClass {
	if name == "" {
		name = DefaultPriorityClassName
	}
	return &schedulingv1.PriorityClass{
		TypeMeta:         metav1.TypeMeta{APIVersion: schedulingv1.SchemeGroupVersion.String(), Kind: "PriorityClass"},
		ObjectMeta:       metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/name": "kquant"}},
		Value:            PriorityValue,
		GlobalDefault:    false,
		PreemptionPolicy: ptr.To(corev1.PreemptNever),
		Description:      "kquant run pods: below every ordinary pod, never preempting; they wait for a free GPU.",
	}
}
