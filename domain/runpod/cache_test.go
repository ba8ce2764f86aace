// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runpod

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestCachedPod(t *testing.T) {
	tests := []struct {
		name       string
		allocation Allocation
	}{
		{name: "device plugin", allocation: AllocationDevicePlugin},
		{name: "DRA claim", allocation: AllocationDRA},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := boundRun()
			objs, err := Build(run, GPU{UUID: run.Spec.GPUUUID}, config(tt.allocation))
			if err != nil {
				t.Fatal(err)
			}
			pod := objs.Pod.DeepCopy()
			pod.Annotations = map[string]string{"note": "not read"}
			pod.Spec.NodeName = "gpu-node-1"
			pod.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "low on memory", HostIP: "10.0.0.1",
				StartTime:  &finished,
				Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "TerminationByKubelet"}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: ContainerName, Image: "registry.local/kquant-agent:v0.4.0", ImageID: "sha256:0",
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled", Message: "m", FinishedAt: finished}}}}}

			got, err := CachedPod(pod.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			cached := got.(*corev1.Pod)
			want := &corev1.Pod{
				TypeMeta: pod.TypeMeta,
				ObjectMeta: func() metav1.ObjectMeta {
					m := *pod.ObjectMeta.DeepCopy()
					m.Annotations = nil
					return m
				}(),
				Spec: corev1.PodSpec{ServiceAccountName: "kquant-run", NodeName: "gpu-node-1", ResourceClaims: pod.Spec.ResourceClaims,
					Containers: []corev1.Container{{Name: ContainerName, Resources: corev1.ResourceRequirements{Limits: pod.Spec.Containers[0].Resources.Limits}}}},
				Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "low on memory", StartTime: &finished,
					Conditions:        pod.Status.Conditions,
					ContainerStatuses: []corev1.ContainerStatus{{Name: ContainerName, State: pod.Status.ContainerStatuses[0].State}}},
			}
			if diff := cmp.Diff(want, cached); diff != "" {
				t.Errorf("CachedPod (-want +got):\n%s", diff)
			}
			if !metav1.IsControlledBy(cached, run) {
				t.Error("the cached pod lost its run's controller reference")
			}
			if diff := cmp.Diff(PodOutcome(run, pod), PodOutcome(run, cached)); diff != "" {
				t.Errorf("PodOutcome differs on the cached pod (-full +cached):\n%s", diff)
			}
		})
	}
}

func TestCachedPodPassesOtherObjects(t *testing.T) {
	for _, obj := range []runtime.Object{&corev1.ConfigMap{Data: map[string]string{"k": "v"}}, &corev1.Node{}} {
		got, err := CachedPod(obj)
		if err != nil {
			t.Fatal(err)
		}
		if got != any(obj) {
			t.Errorf("CachedPod(%T) changed it", obj)
		}
	}
}
