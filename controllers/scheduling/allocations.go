package scheduling

import (
	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// HolderMIG is the holder ForeignAllocations reports for a MIG-partitioned
// GPU when shared GPUs are not allowed.
const HolderMIG = "its MIG slices (shared GPUs are not allowed)"

// ForeignAllocations are the GPUs, by UUID, that the kubelet has allocated to
// pods other than kquant's own run pods, as the nodes' agents publish them
// (GPUNodeProfile status.gpus[].allocations, from the PodResources API), each
// with one holder ("namespace/pod") to name in messages. No run is bound to
// such a GPU: kquant never runs beside another workload.
//
// own reports whether a pod is one of kquant's run pods (its run's own
// allocation, which must not keep the GPU busy twice). A shared allocation (a
// MIG slice, a time-slicing or MPS replica) holds the GPU only when
// allowShared is false; so does MIG mode itself, because with it a whole GPU
// cannot be had.
func ForeignAllocations(nodes []NodeState, own func(namespace, pod string) bool, allowShared bool) map[string]string {
	out := map[string]string{}
	for i := range nodes {
		for _, gpu := range nodes[i].Profile.Status.GPUs {
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
	if gpu.MIGMode == kquantv1alpha1.MIGEnabled && !allowShared {
		return HolderMIG, true
	}
	return "", false
}
