// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runpod

import (
	corev1 "k8s.io/api/core/v1"
)

// CachedPod keeps of a run pod what the manager reads of it, as a cache
// transform (client-go's TransformFunc): a finished run pod stays in the
// manager's cache until its run is deleted, one for each GPU of a fleet-wide
// job, and its full spec (the container's command, environment, volumes,
// mounts, tolerations, affinity and security contexts) made up most of the
// ~10 KB each cost there (docs/benchmarks.md, "Controller at scale"). What
// is kept, and who reads it:
//   - metadata but annotations: the name, UID, labels, the controller
//     reference that ties the pod to its run, the deletion timestamp;
//   - spec.serviceAccountName (execution: only the manager gives a pod the
//     run ServiceAccount), spec.nodeName (the NodeLost message), the
//     containers' names and resource limits and the resource claims
//     (waitsForGPU);
//   - status but the pod's and containers' addresses, images and resources:
//     phase, reason, message, conditions, start time and each container's
//     name and state (PodOutcome, the time limit).
//
// Anything else is not the manager's to read, and the manager never writes
// a run pod back (it creates and deletes them), so a cached pod never needs
// the rest. Objects other than Pods pass unchanged.
func CachedPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	kept := &corev1.Pod{
		TypeMeta:   pod.TypeMeta,
		ObjectMeta: pod.ObjectMeta,
		Spec: corev1.PodSpec{
			ServiceAccountName: pod.Spec.ServiceAccountName,
			NodeName:           pod.Spec.NodeName,
			ResourceClaims:     pod.Spec.ResourceClaims,
		},
		Status: corev1.PodStatus{
			Phase:      pod.Status.Phase,
			Reason:     pod.Status.Reason,
			Message:    pod.Status.Message,
			Conditions: pod.Status.Conditions,
			StartTime:  pod.Status.StartTime,
		},
	}
	kept.Annotations = nil
	for _, c := range pod.Spec.Containers {
		kept.Spec.Containers = append(kept.Spec.Containers, corev1.Container{Name: c.Name, Resources: corev1.ResourceRequirements{Limits: c.Resources.Limits}})
	}
	for _, cs := range pod.Status.ContainerStatuses {
		kept.Status.ContainerStatuses = append(kept.Status.ContainerStatuses, corev1.ContainerStatus{Name: cs.Name, State: cs.State})
	}
	return kept, nil
}
