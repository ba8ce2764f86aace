// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/testenv"
	"github.com/kquant/kquant/test/wait"
)

// heldGPUs is how many of the simulated GPUs the "training" pod holds.
const heldGPUs = 2

// gpusHeldByAnotherPod is issue 17's story on the real cluster (the chart's
// default gpuAllocation DevicePlugin): a "training" pod holds 2 of the 4
// simulated GPUs; the agent publishes the kubelet's allocation in its
// profile; an EachGPU job validates the other 2 in run pods and never touches
// the held ones, whose runs wait with WaitingForGPU (the job's
// status.waitingForGPU); when the training pod ends, the remaining runs start
// and succeed, and every GPU was covered once; events and conditions tell it.
func gpusHeldByAnotherPod(t *testing.T, cl *cluster) {
	ctx := t.Context()
	ns := cl.namespace(t, "e2e-alloc")
	training := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "training", Namespace: ns},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Tolerations:                   []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Containers: []corev1.Container{{
				Name: "trainer", Image: "kquant.local/pause:3.10", ImagePullPolicy: corev1.PullNever,
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(heldGPUs, resource.DecimalSI)}},
			}},
		},
	}
	if err := cl.c.Create(ctx, training); err != nil {
		t.Fatalf("creating the training pod: %v", err)
	}
	held := map[string]bool{}
	wait.For(t, 2*time.Minute, "the profile to show the training pod's GPUs", func() error {
		p := &v1alpha1.GPUNodeProfile{}
		if err := cl.c.Get(ctx, client.ObjectKey{Name: node}, p); err != nil {
			return err
		}
		clear(held)
		for _, g := range p.Status.GPUs {
			for _, a := range g.Allocations {
				if a.Namespace == ns && a.Pod == "training" {
					held[g.UUID] = true
				}
			}
		}
		if len(held) != heldGPUs {
			return fmt.Errorf("%d GPUs allocated to %s/training in the profile, want %d", len(held), ns, heldGPUs)
		}
		return nil
	})

	root := testenv.RepoRoot()
	cl.apply(t, ns, nil, filepath.Join(root, "recipes"))
	job := builders.MakeQuantJob("each-gpu", ns).Recipe("mxfp8").EachGPU().Obj()
	if err := cl.c.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 5*time.Minute, "the free GPUs validated, the held ones waited for", func() error {
		succeeded, waiting := 0, 0
		for _, r := range cl.runs(t, ns) {
			if g := r.Status.AllocatedGPU; g != nil && held[g.UUID] {
				t.Fatalf("run %s executed on GPU %s, which the training pod holds", r.Name, g.UUID)
			}
			switch {
			case r.Status.Phase == v1alpha1.RunPhaseSucceeded:
				succeeded++
			case r.Status.Reason == v1alpha1.RunReasonWaitingForGPU:
				waiting++
			}
		}
		j := &v1alpha1.QuantJob{}
		if err := cl.c.Get(ctx, client.ObjectKeyFromObject(job), j); err != nil {
			return err
		}
		if succeeded != simulatedGPUs-heldGPUs || waiting != heldGPUs || j.Status.WaitingForGPU != heldGPUs {
			return fmt.Errorf("%d succeeded, %d waiting, job waitingForGPU %d", succeeded, waiting, j.Status.WaitingForGPU)
		}
		return nil
	})
	t.Logf("while the training pod holds %d GPUs:\n%s", heldGPUs, cl.kubectl(t, "get", "quantjobs,quantruns,pods", "-n", ns, "-o", "wide"))

	if err := cl.c.Delete(ctx, training, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	done := cl.waitJob(t, ns, job.Name, v1alpha1.JobPhaseSucceeded, 5*time.Minute)
	covered := map[string]bool{}
	var executed []string
	for _, r := range cl.runs(t, ns) {
		if r.Status.Phase == v1alpha1.RunPhaseSucceeded && r.Status.AllocatedGPU != nil {
			covered[r.Status.AllocatedGPU.UUID] = true
		}
		executed = append(executed, fmt.Sprintf("%s: %s target %s allocated %+v", r.Name, r.Status.Phase, r.Spec.GPUUUID, r.Status.AllocatedGPU))
		pod := &corev1.Pod{}
		if err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: r.Name}, pod); err != nil {
			t.Errorf("run %s has no run pod: %v", r.Name, err)
		} else if q := pod.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]; q.Value() != 1 || pod.Spec.PriorityClassName != "kquant-run" {
			t.Errorf("run pod %s limits %v priorityClass %q", pod.Name, pod.Spec.Containers[0].Resources.Limits, pod.Spec.PriorityClassName)
		}
	}
	if len(covered) != simulatedGPUs || done.Status.WaitingForGPU != 0 {
		t.Errorf("succeeded runs executed on %d GPUs, want %d; job waitingForGPU %d; runs:\n%s", len(covered), simulatedGPUs, done.Status.WaitingForGPU, strings.Join(executed, "\n"))
	}
	events := cl.kubectl(t, "get", "events", "-n", ns, "--sort-by", ".lastTimestamp")
	for _, want := range []string{v1alpha1.RunReasonWaitingForGPU, "RunPodCreated"} {
		if !strings.Contains(events, want) {
			t.Errorf("events do not tell %s:\n%s", want, events)
		}
	}
	t.Logf("events:\n%s", events)
}
