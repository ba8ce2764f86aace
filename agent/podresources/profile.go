// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package podresources

import (
	"github.com/kquant/kquant/api/v1alpha1"
)

// ByGPU is the snapshot as the GPUNodeProfile publishes it: for each GPU
// UUID, the containers that hold it (or a MIG slice or replica of it), in the
// snapshot's order. GPUs nobody holds are absent.
func (s Snapshot) ByGPU() map[string][]v1alpha1.GPUAllocation {
	out := map[string][]v1alpha1.GPUAllocation{}
	for _, a := range s.Allocations {
		out[a.GPUUUID] = append(out[a.GPUUUID], v1alpha1.GPUAllocation{
			Namespace:    a.Container.Namespace,
			Pod:          a.Container.Pod,
			Container:    a.Container.Container,
			Source:       v1alpha1.AllocationSource(a.Source),
			ResourceName: a.ResourceName,
			Claim:        a.Claim,
			Shared:       a.Shared(),
			MIGDevice:    a.MIGDevice,
		})
	}
	return out
}
