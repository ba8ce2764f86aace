// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package scheduling

import (
	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// ForeignAllocations are the units of work, by UUID (a GPU's, or a MIG
// device's), that the kubelet has allocated to pods other than kquant's own
// run pods, as the nodes' agents publish them (GPUNodeProfile
// status.gpus[].allocations, from the PodResources API), each with one holder
// ("namespace/pod") to name in messages. No run is bound to such a unit:
// kquant never runs beside another workload.
//
// own reports whether a pod is one of kquant's run pods (its run's own
// allocation, which must not keep the GPU busy twice). On a whole GPU, a
// shared allocation (a time-slicing or MPS replica) holds the GPU only when
// allowShared is false. On a MIG-enabled GPU the units are its MIG devices:
// an allocation holds the MIG device it names, and one whose MIG device the
// agent could not resolve holds every MIG device of the GPU.
func ForeignAllocations(nodes []NodeState, own func(namespace, pod string) bool, allowShared bool) map[string]string {
	out := map[string]string{}
	for i := range nodes {
		for _, gpu := range nodes[i].Profile.Status.GPUs {
			if gpu.MIGMode == kquantv1alpha1.MIGEnabled {
				migHolders(&gpu, own, out)
				continue
			}
			if holder, ok := foreignHolder(&gpu, own, allowShared); ok {
				out[gpu.UUID] = holder
			}
		}
	}
	return out
}

func foreignHolder(gpu *kquantv1alpha1.GPU, own func(namespace, pod string) bool, allowShared bool) (string, bool) {
	for _, a := range gpu.Allocations {
		if a.Shared && allowShared || own(a.Namespace, a.Pod) {
			continue
		}
		return a.Namespace + "/" + a.Pod, true
	}
	return "", false
}

// migHolders adds the held MIG devices of a MIG-enabled GPU to out.
func migHolders(gpu *kquantv1alpha1.GPU, own func(namespace, pod string) bool, out map[string]string) {
	known := map[string]bool{}
	for _, m := range gpu.MIGDevices {
		known[m.UUID] = true
	}
	for _, a := range gpu.Allocations {
		if own(a.Namespace, a.Pod) {
			continue
		}
		holder := a.Namespace + "/" + a.Pod
		if known[a.MIGDevice] {
			if _, held := out[a.MIGDevice]; !held {
				out[a.MIGDevice] = holder
			}
			continue
		}
		for _, m := range gpu.MIGDevices {
			if _, held := out[m.UUID]; !held {
				out[m.UUID] = holder
			}
		}
	}
}
