// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runmode

import (
	"context"
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"k8s.io/utils/ptr"

	"github.com/kquant/kquant/agent/nvml"
	"github.com/kquant/kquant/agent/profile"
	"github.com/kquant/kquant/api/v1alpha1"
)

// allocated is the GPU the kubelet gave this pod, as NVML inside the pod
// shows it: the run's GPU for the runner (its index the pod's own CUDA
// ordinal, its UUID the MIG device's for a slice, so that the guard checks
// exactly what the run uses) and the run's status.allocatedGPU.
type allocated struct {
	gpu    v1alpha1.GPU
	status *v1alpha1.AllocatedGPU
}

// findAllocated reads the one GPU this container sees. The kubelet's
// allocation decides what NVML shows inside a container (device plugin and
// DRA alike), so more than one GPU means the container was given every GPU
// behind the kubelet's back (NVIDIA_VISIBLE_DEVICES=all), which a run never
// uses. The caller keeps lib initialised (NVML counts its Inits) for the
// guard.
func findAllocated(ctx context.Context, lib gonvml.Interface, run *v1alpha1.QuantRun, source v1alpha1.AllocationSource) (allocated, error) {
	n, err := nvml.Open(ctx, lib)
	if err != nil {
		return allocated{}, fmt.Errorf("no GPU visible to the run pod: %w", err)
	}
	defer func() { _ = n.Close() }()
	node, err := n.Discover(ctx)
	if err != nil {
		return allocated{}, fmt.Errorf("reading the run pod's GPU: %w", err)
	}
	switch len(node.GPUs) {
	case 0:
		return allocated{}, fmt.Errorf("no GPU visible to the run pod (%d devices could not be read: %v)", len(node.Problems), node.Problems)
	case 1:
	default:
		return allocated{}, fmt.Errorf("the run pod sees %d GPUs, want exactly the one the kubelet allocated (is NVIDIA_VISIBLE_DEVICES set on it?)", len(node.GPUs))
	}
	g := node.GPUs[0]
	if g.Health == v1alpha1.HealthUnhealthy {
		return allocated{}, fmt.Errorf("GPU %s is unhealthy: %s", g.UUID, g.HealthMessage)
	}
	out := allocated{
		gpu:    profile.GPU(g, node.CUDADriverVersion),
		status: &v1alpha1.AllocatedGPU{UUID: g.UUID, Source: source},
	}
	// NVML in a container given a MIG slice shows the parent GPU with that
	// MIG device alone: the run and its guard use the MIG device.
	executed := g.UUID
	if g.MIGMode == v1alpha1.MIGEnabled {
		if len(g.MIGDevices) != 1 {
			return allocated{}, fmt.Errorf("GPU %s is in MIG mode and the run pod sees %d of its MIG devices, want exactly the one the kubelet allocated", g.UUID, len(g.MIGDevices))
		}
		executed = g.MIGDevices[0].UUID
		out.status.MIGDevice, out.gpu.UUID = executed, executed
		out.gpu.MemoryMiB = g.MIGDevices[0].MemoryMiB
	}
	// The index inside the pod is the pod's own (0); the node's index is
	// known only when the kubelet gave the GPU (or MIG device) the run was
	// bound to.
	if executed == run.Spec.GPUUUID && run.Spec.GPUIndex != nil {
		out.status.Index = ptr.To(*run.Spec.GPUIndex)
	}
	return out, nil
}
