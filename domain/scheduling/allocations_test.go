// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package scheduling

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
)

func TestForeignAllocations(t *testing.T) {
	alloc := func(ns, pod string, shared bool) kquantv1alpha1.GPUAllocation {
		return kquantv1alpha1.GPUAllocation{Namespace: ns, Pod: pod, Source: kquantv1alpha1.AllocationSourceDevicePlugin,
			ResourceName: "nvidia.com/gpu", Shared: shared}
	}
	node := func(mutate func(gpus []kquantv1alpha1.GPU)) []NodeState {
		p := builders.MakeGPUNodeProfile("n1").GPUs(builders.H100, 4).Ready().Obj()
		mutate(p.Status.GPUs)
		return []NodeState{{Profile: p}}
	}
	mig := func(g *kquantv1alpha1.GPU) {
		g.MIGMode = kquantv1alpha1.MIGEnabled
		g.MIGDevices = []kquantv1alpha1.MIGDevice{{UUID: "MIG-a", Profile: "3g.40gb"}, {UUID: "MIG-b", Profile: "3g.40gb"}}
	}
	ownRuns := func(ns, pod string) bool { return ns == "bench" && pod == "job-0-0" }
	cases := map[string]struct {
		nodes       []NodeState
		allowShared bool
		want        map[string]string
	}{
		"free GPUs hold nothing": {
			nodes: node(func([]kquantv1alpha1.GPU) {}),
			want:  map[string]string{},
		},
		"a training pod holds its GPUs": {
			nodes: node(func(g []kquantv1alpha1.GPU) {
				g[0].Allocations = []kquantv1alpha1.GPUAllocation{alloc("ml", "train-0", false)}
				g[1].Allocations = []kquantv1alpha1.GPUAllocation{alloc("ml", "train-0", false)}
			}),
			want: map[string]string{builders.GPUUUID("n1", 0): "ml/train-0", builders.GPUUUID("n1", 1): "ml/train-0"},
		},
		"kquant's own run pod does not hold its GPU twice": {
			nodes: node(func(g []kquantv1alpha1.GPU) {
				g[2].Allocations = []kquantv1alpha1.GPUAllocation{alloc("bench", "job-0-0", false)}
			}),
			want: map[string]string{},
		},
		"a shared replica holds the GPU unless shared GPUs are allowed": {
			nodes: node(func(g []kquantv1alpha1.GPU) {
				g[3].Allocations = []kquantv1alpha1.GPUAllocation{alloc("ml", "notebook", true)}
			}),
			want: map[string]string{builders.GPUUUID("n1", 3): "ml/notebook"},
		},
		"shared replicas allowed": {
			nodes: node(func(g []kquantv1alpha1.GPU) {
				g[3].Allocations = []kquantv1alpha1.GPUAllocation{alloc("ml", "notebook", true)}
			}),
			allowShared: true,
			want:        map[string]string{},
		},
		"on a MIG-enabled GPU a pod holds the MIG device it names, whatever allowShared says": {
			nodes: node(func(g []kquantv1alpha1.GPU) {
				mig(&g[1])
				a := alloc("ml", "notebook", true)
				a.MIGDevice = "MIG-b"
				own := alloc("bench", "job-0-0", true)
				own.MIGDevice = "MIG-a"
				g[1].Allocations = []kquantv1alpha1.GPUAllocation{own, a}
			}),
			allowShared: true,
			want:        map[string]string{"MIG-b": "ml/notebook"},
		},
		"a MIG allocation the agent could not resolve holds every MIG device of its GPU": {
			nodes: node(func(g []kquantv1alpha1.GPU) {
				mig(&g[1])
				a := alloc("ml", "notebook", true)
				a.MIGDevice = "nvidia1/gi3"
				g[1].Allocations = []kquantv1alpha1.GPUAllocation{a}
			}),
			want: map[string]string{"MIG-a": "ml/notebook", "MIG-b": "ml/notebook"},
		},
		"MIG mode alone holds nothing: the job's opt-in decides (eligibility)": {
			nodes: node(func(g []kquantv1alpha1.GPU) { mig(&g[1]) }),
			want:  map[string]string{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ForeignAllocations(tc.nodes, ownRuns, tc.allowShared)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ForeignAllocations (-want +got):\n%s", diff)
			}
		})
	}
}
