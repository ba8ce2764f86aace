// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/testenv"
)

// migProfiles are the MIG devices of the simulated MIG-partitioned A100, in
// slot order (simulate.MIGSlices).
var migProfiles = []string{"3g.40gb", "2g.20gb", "2g.20gb"}

// migSlices is issue 17's MIG story on the real cluster: the test device
// plugin advertises the MIG devices of the simulated MIG-partitioned A100
// as nvidia.com/mig-<profile> (NVIDIA's mixed strategy) and the agent
// publishes them from the simulated NVML. A job on Ampere GPUs (only the
// A100 is one) without spec.placement.migSlices is Unschedulable and says
// why. A "notebook" pod holds the 3g.40gb slice: the profile names that MIG
// device and its pod. The job with the opt-in validates the two 2g.20gb
// slices in run pods that asked for nvidia.com/mig-2g.20gb, each run
// recording the MIG device it got in status.allocatedGPU; its 3g.40gb run
// waits for the notebook's slice, and runs once the notebook ends.
func migSlices(t *testing.T, cl *cluster) {
	ctx := t.Context()
	ns := cl.namespace(t, "e2e-mig")

	// The agent publishes the MIG devices, the kubelet counts them.
	var parent v1alpha1.GPU
	eventually(t, 2*time.Minute, "the profile to show the MIG GPU's devices", func() error {
		p := &v1alpha1.GPUNodeProfile{}
		if err := cl.c.Get(ctx, client.ObjectKey{Name: node}, p); err != nil {
			return err
		}
		for _, g := range p.Status.GPUs {
			if g.MIGMode == v1alpha1.MIGEnabled {
				parent = g
			}
		}
		var got []string
		for _, m := range parent.MIGDevices {
			got = append(got, m.Profile)
		}
		if !slices.Equal(got, migProfiles) {
			return fmt.Errorf("MIG GPU %s with profiles %v, want %v", parent.UUID, got, migProfiles)
		}
		return nil
	})
	eventually(t, time.Minute, "the kubelet to count the MIG devices (mixed strategy)", func() error {
		n := &corev1.Node{}
		if err := cl.c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return err
		}
		for res, want := range map[corev1.ResourceName]int64{"nvidia.com/mig-3g.40gb": 1, "nvidia.com/mig-2g.20gb": 2, "nvidia.com/gpu": simulatedGPUs} {
			if got := n.Status.Allocatable[res]; got.Value() != want {
				return fmt.Errorf("node allocatable %s = %s, want %d", res, got.String(), want)
			}
		}
		return nil
	})

	root := testenv.RepoRoot()
	cl.apply(t, ns, nil, filepath.Join(root, "recipes"))

	// Without the opt-in the MIG GPU is left alone, and the job says why.
	without := builders.MakeQuantJob("ampere", ns).Recipe("fp8-current-scaling").EachGPU().Architectures(v1alpha1.ArchitectureAmpere).Obj()
	if err := cl.c.Create(ctx, without); err != nil {
		t.Fatal(err)
	}
	j := cl.waitJob(t, ns, without.Name, v1alpha1.JobPhaseUnschedulable, 2*time.Minute)
	if c := meta.FindStatusCondition(j.Status.Conditions, v1alpha1.JobConditionScheduled); c == nil ||
		!strings.Contains(c.Message, "have only MIG-enabled GPUs, whose slices need spec.placement.migSlices: Include") {
		t.Errorf("job without the opt-in: Scheduled condition %+v does not say why", c)
	}
	t.Logf("job without the opt-in:\n%s", cl.kubectl(t, "get", "quantjob", without.Name, "-n", ns, "-o", "wide"))

	// A notebook holds the 3g.40gb slice: the profile says which MIG device.
	notebook := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "notebook", Namespace: ns},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{
				Name: "jupyter", Image: "kquant.local/pause:3.10", ImagePullPolicy: corev1.PullNever,
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/mig-3g.40gb": *resource.NewQuantity(1, resource.DecimalSI)}},
			}},
		},
	}
	if err := cl.c.Create(ctx, notebook); err != nil {
		t.Fatalf("creating the notebook pod: %v", err)
	}
	held := parent.MIGDevices[0].UUID
	eventually(t, 2*time.Minute, "the profile to show the notebook's MIG device", func() error {
		p := &v1alpha1.GPUNodeProfile{}
		if err := cl.c.Get(ctx, client.ObjectKey{Name: node}, p); err != nil {
			return err
		}
		for _, g := range p.Status.GPUs {
			for _, a := range g.Allocations {
				if a.Namespace == ns && a.Pod == "notebook" {
					if g.UUID != parent.UUID || a.MIGDevice != held || a.ResourceName != "nvidia.com/mig-3g.40gb" || !a.Shared {
						return fmt.Errorf("notebook allocation on GPU %s: %+v, want MIG device %s of %s", g.UUID, a, held, parent.UUID)
					}
					return nil
				}
			}
		}
		return fmt.Errorf("no allocation of %s/notebook in the profile", ns)
	})

	// With the opt-in: one run per MIG device; the free ones run, the held
	// one waits.
	with := builders.MakeQuantJob("slices", ns).Recipe("fp8-current-scaling").EachGPU().Architectures(v1alpha1.ArchitectureAmpere).MIGSlices().Obj()
	if err := cl.c.Create(ctx, with); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Minute, "the free slices validated, the held one waited for", func() error {
		succeeded, waiting := 0, 0
		for _, r := range cl.runs(t, ns) {
			if r.Spec.JobRef.Name != with.Name {
				continue
			}
			if g := r.Status.AllocatedGPU; g != nil && g.MIGDevice == held {
				t.Fatalf("run %s executed on MIG device %s, which the notebook holds", r.Name, held)
			}
			switch {
			case r.Status.Phase == v1alpha1.RunPhaseSucceeded:
				succeeded++
			case r.Status.Reason == v1alpha1.RunReasonWaitingForGPU:
				waiting++
			}
		}
		if succeeded != 2 || waiting != 1 {
			return fmt.Errorf("%d succeeded, %d waiting", succeeded, waiting)
		}
		return nil
	})
	t.Logf("while the notebook holds %s:\n%s", held, cl.kubectl(t, "get", "quantjobs,quantruns,pods", "-n", ns, "-o", "wide"))

	if err := cl.c.Delete(ctx, notebook, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	cl.waitJob(t, ns, with.Name, v1alpha1.JobPhaseSucceeded, 5*time.Minute)
	covered := map[string]bool{}
	for _, r := range cl.runs(t, ns) {
		if r.Spec.JobRef.Name != with.Name || r.Status.Phase != v1alpha1.RunPhaseSucceeded {
			continue
		}
		g := r.Status.AllocatedGPU
		if g == nil || g.UUID != parent.UUID || !strings.HasPrefix(g.MIGDevice, "MIG-") || g.Source != v1alpha1.AllocationSourceDevicePlugin {
			t.Errorf("run %s allocatedGPU %+v, want a MIG device of %s from the device plugin", r.Name, g, parent.UUID)
			continue
		}
		covered[g.MIGDevice] = true
		pod := &corev1.Pod{}
		if err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: r.Name}, pod); err != nil {
			t.Errorf("run %s has no run pod: %v", r.Name, err)
			continue
		}
		limits := pod.Spec.Containers[0].Resources.Limits
		if q := limits[corev1.ResourceName("nvidia.com/mig-"+r.Spec.MIGProfile)]; r.Spec.MIGProfile == "" || q.Value() != 1 {
			t.Errorf("run %s (migProfile %q): run pod limits %v, want nvidia.com/mig-%s: 1", r.Name, r.Spec.MIGProfile, limits, r.Spec.MIGProfile)
		}
		if _, whole := limits["nvidia.com/gpu"]; whole {
			t.Errorf("run pod %s asks for a whole GPU: %v", pod.Name, limits)
		}
		t.Logf("run %s: migProfile %s, executed on MIG device %s of GPU %s", r.Name, r.Spec.MIGProfile, g.MIGDevice, g.UUID)
	}
	if len(covered) != len(migProfiles) {
		t.Errorf("succeeded runs executed on %d MIG devices (%v), want %d", len(covered), covered, len(migProfiles))
	}
	t.Logf("job with the opt-in:\n%s", cl.kubectl(t, "get", "quantjobs,quantruns", "-n", ns, "-o", "wide"))
	// The Unschedulable job has told its story; later scenarios count jobs.
	if err := cl.c.Delete(ctx, without); err != nil {
		t.Error(err)
	}
}
