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
	// The index inside the pod is the pod's own (0); the node's index is
	// known only when the kubelet gave the GPU the run was bound to.
	if g.UUID == run.Spec.GPUUUID && run.Spec.GPUIndex != nil {
		out.status.Index = ptr.To(*run.Spec.GPUIndex)
	}
	mig, err := migDevice(lib, g.UUID)
	if err != nil {
		return allocated{}, err
	}
	if mig != "" {
		out.status.MIGDevice, out.gpu.UUID = mig, mig
	}
	return out, nil
}

// migDevice returns the UUID of the MIG device this container was given on
// the GPU, empty when MIG is off or not supported.
func migDevice(lib gonvml.Interface, gpuUUID string) (string, error) {
	dev, ret := lib.DeviceGetHandleByUUID(gpuUUID)
	if ret != gonvml.SUCCESS {
		return "", fmt.Errorf("finding GPU %s: %w", gpuUUID, ret)
	}
	current, _, ret := dev.GetMigMode()
	if ret != gonvml.SUCCESS || current != gonvml.DEVICE_MIG_ENABLE {
		return "", nil
	}
	slots, ret := dev.GetMaxMigDeviceCount()
	if ret != gonvml.SUCCESS {
		return "", fmt.Errorf("counting MIG devices of GPU %s: %w", gpuUUID, ret)
	}
	for i := range slots {
		mig, ret := dev.GetMigDeviceHandleByIndex(i)
		if ret != gonvml.SUCCESS {
			continue // an empty slot, or one not given to this container
		}
		if uuid, ret := mig.GetUUID(); ret == gonvml.SUCCESS {
			return uuid, nil
		}
	}
	return "", fmt.Errorf("GPU %s is in MIG mode and the run pod sees none of its MIG devices", gpuUUID)
}
