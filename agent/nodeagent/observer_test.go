// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package nodeagent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	"k8s.io/utils/ptr"

	"github.com/kquant/kquant/agent/nodeagent"
	"github.com/kquant/kquant/agent/podresources"
	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/fakekubelet"
)

// containerWith is one pod's container holding devices of the device plugin
// or of a DRA claim.
func containerWith(ns, pod string, devs []*podresourcesv1.ContainerDevices, claims []*podresourcesv1.DynamicResource) *podresourcesv1.PodResources {
	return &podresourcesv1.PodResources{Namespace: ns, Name: pod, Containers: []*podresourcesv1.ContainerResources{
		{Name: "main", Devices: devs, DynamicResources: claims},
	}}
}

// TestObserverPublishesAllocationsAndRunsNothing: with run pods (the
// default) the agent executes no run, and its profile shows which GPU the
// kubelet gave to whom, device plugin (by index) and DRA (a ResourceSlice
// naming the device's UUID), refreshed when a pod goes away.
func TestObserverPublishesAllocationsAndRunsNothing(t *testing.T) {
	ctx := context.Background()
	const node = "observer-node"
	gpu0, gpu1 := simulate.UUID(node, 0), simulate.UUID(node, 1)
	slice := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"},
		Spec: resourcev1.ResourceSliceSpec{
			Driver: podresources.DefaultDRADriver, NodeName: ptr.To(node),
			Pool: resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "gpu-1", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"uuid": {StringValue: ptr.To(gpu1)},
			}}},
		},
	}
	if err := env.Client.Create(ctx, slice); err != nil {
		t.Fatal(err)
	}
	training := containerWith("ml", "train", []*podresourcesv1.ContainerDevices{{ResourceName: podresources.GPUResourceName, DeviceIds: []string{"0"}}}, nil)
	draPod := containerWith("ml", "infer", nil, []*podresourcesv1.DynamicResource{{ClaimName: "infer-gpu", ClaimNamespace: "ml",
		ClaimResources: []*podresourcesv1.ClaimResource{{DriverName: podresources.DefaultDRADriver, PoolName: node, DeviceName: "gpu-1"}}}})
	kubelet := fakekubelet.New(&podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{training, draPod}}, nil, true)

	ns, err := env.CreateNamespace(ctx, "observer")
	if err != nil {
		t.Fatal(err)
	}
	startAgent(t, nodeagent.Options{NodeName: node, Namespace: agentNamespace, Execution: nodeagent.ExecutionRunPod,
		Simulate: spec(t, "H100:2"), PodResourcesSocket: fakekubelet.Serve(t, kubelet), AllocationInterval: 50 * time.Millisecond})
	newRun(t, ns, "for-a-run-pod", node, 0, node)

	want := map[string][]v1alpha1.GPUAllocation{
		gpu0: {{Namespace: "ml", Pod: "train", Container: "main", Source: v1alpha1.AllocationSourceDevicePlugin, ResourceName: podresources.GPUResourceName}},
		gpu1: {{Namespace: "ml", Pod: "infer", Container: "main", Source: v1alpha1.AllocationSourceDRA, ResourceName: podresources.DefaultDRADriver, Claim: "ml/infer-gpu"}},
	}
	var p *v1alpha1.GPUNodeProfile
	// published waits until the profile says what a check wants.
	published := func(what string, check func(*v1alpha1.GPUNodeProfile) string) {
		t.Helper()
		eventually(t, 20*time.Second, what, func() (err error) {
			if p, err = getProfile(ctx, node); err != nil {
				return err
			}
			if diff := check(p); diff != "" {
				return fmt.Errorf("(-want +got):\n%s", diff)
			}
			return nil
		})
	}
	allocations := func(p *v1alpha1.GPUNodeProfile) string {
		got := map[string][]v1alpha1.GPUAllocation{}
		for _, g := range p.Status.GPUs {
			if len(g.Allocations) > 0 {
				got[g.UUID] = g.Allocations
			}
		}
		return cmp.Diff(want, got)
	}
	published("allocations", allocations)
	if p.Status.Backend != v1alpha1.BackendReference || p.Status.Baselines != nil {
		t.Errorf("backend %q baselines %v: an observer of simulated GPUs measures nothing", p.Status.Backend, p.Status.Baselines)
	}

	// The training pod ends: its GPU shows free within an allocation interval.
	kubelet.SetList(&podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{draPod}})
	delete(want, gpu0)
	published("freed GPU", allocations)
	// The run is the run pod's to execute, never the observer's.
	run, err := getRun(ctx, ns, "for-a-run-pod")
	if err != nil {
		t.Fatal(err)
	}
	if agentTouched(run) {
		t.Errorf("the observer touched the run: %+v", run.Status)
	}

	// A run pod finished the run and measured its GPU's baselines: the
	// profile takes them.
	want2 := &v1alpha1.Baselines{LaunchMicros: "2.10", GraphLaunchMicros: "1.50", CopyBandwidthGBps: "3010.5"}
	now := metav1.Now()
	run.Status.Phase, run.Status.CompletionTime = v1alpha1.RunPhaseSucceeded, &now
	run.Status.Results = &v1alpha1.RunResults{Backend: "cuda", Verdict: v1alpha1.VerdictPass, Baselines: want2}
	if err := env.Client.Status().Update(ctx, run); err != nil {
		t.Fatal(err)
	}
	published("baselines from the run", func(p *v1alpha1.GPUNodeProfile) string { return cmp.Diff(want2, p.Status.Baselines) })
}

// TestInAgentExecutionIsGuarded: with gpuAllocation None the agent runs the
// node's runs itself, and the same guard as a run pod's keeps a run off a
// GPU where another process is; the other GPU's run succeeds, recording the
// GPU it ran on.
func TestInAgentExecutionIsGuarded(t *testing.T) {
	ctx := context.Background()
	ns, err := env.CreateNamespace(ctx, "guarded")
	if err != nil {
		t.Fatal(err)
	}
	const node = "guarded-node"
	sim := simulate.NewNode(node, spec(t, "H100:2"))
	sim.SetProcesses(simulate.UUID(node, 0), 4242)
	startAgent(t, nodeagent.Options{NodeName: node, Namespace: agentNamespace, Execution: nodeagent.ExecutionNone,
		Simulate: spec(t, "H100:2"), GuardNVML: sim.Library()})
	newRun(t, ns, "busy-gpu", node, 0, node)
	newRun(t, ns, "free-gpu", node, 1, node)

	busy := waitPhase(t, ns, "busy-gpu", v1alpha1.RunPhaseFailed, 20*time.Second)
	if msg := busy.Status.Message; !strings.HasPrefix(msg, v1alpha1.RunReasonGPUInUse+": ") || !strings.Contains(msg, "4242") || busy.Status.Results != nil {
		t.Errorf("busy GPU's run: %+v, want Failed with a GPUInUse message naming 4242", busy.Status)
	}
	free := waitPhase(t, ns, "free-gpu", v1alpha1.RunPhaseSucceeded, 20*time.Second)
	want := &v1alpha1.AllocatedGPU{UUID: simulate.UUID(node, 1), Index: ptr.To[int32](1)}
	if diff := cmp.Diff(want, free.Status.AllocatedGPU); diff != "" {
		t.Errorf("allocatedGPU (-want +got):\n%s", diff)
	}
}
