// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpuguard

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// ErrGPUInUse matches an *InUseError: a process other than the run's own is
// on its GPU.
var ErrGPUInUse = errors.New(kquantv1alpha1.RunReasonGPUInUse)

// Library is the part of go-nvml's Interface the guard needs; nvml.New()
// and go-nvml's mock.Interface both satisfy it. The caller initialises it.
type Library interface {
	DeviceGetHandleByUUID(uuid string) (nvml.Device, nvml.Return)
}

// ProcessKind is how a process uses the GPU.
type ProcessKind string

const (
	KindCompute    ProcessKind = "compute"
	KindMPSCompute ProcessKind = "mps-compute"
	KindGraphics   ProcessKind = "graphics"
)

// Process is a process NVML reports on a GPU.
type Process struct {
	// PID is the process's PID in the host's namespace.
	PID uint32
	// UsedMemoryBytes is its device memory; 0 when NVML cannot tell.
	UsedMemoryBytes uint64
	Kind            ProcessKind
}

// InUseError lists the foreign processes found on a GPU.
type InUseError struct {
	GPU       string
	Processes []Process
}

// Error says which processes hold the GPU.
func (e *InUseError) Error() string {
	pids := make([]string, 0, len(e.Processes))
	for _, p := range e.Processes {
		s := fmt.Sprintf("%d (%s", p.PID, p.Kind)
		if p.UsedMemoryBytes > 0 {
			s += fmt.Sprintf(", %d MiB", p.UsedMemoryBytes>>20)
		}
		pids = append(pids, s+")")
	}
	return fmt.Sprintf("GPU %s is used by other processes: %s", e.GPU, strings.Join(pids, ", "))
}

// Is makes an *InUseError match ErrGPUInUse.
func (e *InUseError) Is(target error) bool { return target == ErrGPUInUse }

// TerminationMessage is err as a run pod writes it to its termination log,
// "<Reason>: <message>", which the controller maps back to the run's reason.
func TerminationMessage(err error) string {
	if errors.Is(err, ErrGPUInUse) {
		return kquantv1alpha1.RunReasonGPUInUse + ": " + err.Error()
	}
	return err.Error()
}

// Allowed reports whether a host PID belongs to the run itself.
type Allowed func(pid uint32) bool

// NoProcessAllowed accepts nothing: the pre-start check, before the run has a
// CUDA context of its own.
func NoProcessAllowed(uint32) bool { return false }

// PIDs accepts exactly the given host PIDs.
func PIDs(pids ...uint32) Allowed {
	return func(pid uint32) bool { return slices.Contains(pids, pid) }
}

// Guard checks GPUs for foreign processes.
type Guard struct {
	lib Library
}

// New returns a Guard over an initialised NVML library.
func New(lib Library) *Guard { return &Guard{lib: lib} }

// Check returns an *InUseError when a process that allowed does not accept
// is on the GPU (or MIG device) with this UUID, and a wrapped NVML error when
// it cannot tell: the caller should then treat the GPU as not safe to use.
func (g *Guard) Check(gpuUUID string, allowed Allowed) error {
	procs, err := g.Processes(gpuUUID)
	if err != nil {
		return err
	}
	if allowed == nil {
		allowed = NoProcessAllowed
	}
	var foreign []Process
	for _, p := range procs {
		if !allowed(p.PID) {
			foreign = append(foreign, p)
		}
	}
	if len(foreign) > 0 {
		return &InUseError{GPU: gpuUUID, Processes: foreign}
	}
	return nil
}

// Processes returns every process on the GPU, once per PID and kind, sorted
// by PID. Graphics and MPS lists are best effort (many data-centre GPUs
// answer NOT_SUPPORTED); the compute list is required.
func (g *Guard) Processes(gpuUUID string) ([]Process, error) {
	dev, ret := g.lib.DeviceGetHandleByUUID(gpuUUID)
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("finding GPU %s: %w", gpuUUID, ret)
	}
	compute, ret := dev.GetComputeRunningProcesses()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("listing compute processes on GPU %s: %w", gpuUUID, ret)
	}
	out := processes(compute, KindCompute)
	if mps, ret := dev.GetMPSComputeRunningProcesses(); ret == nvml.SUCCESS {
		out = append(out, processes(mps, KindMPSCompute)...)
	}
	if graphics, ret := dev.GetGraphicsRunningProcesses(); ret == nvml.SUCCESS {
		out = append(out, processes(graphics, KindGraphics)...)
	}
	slices.SortFunc(out, func(a, b Process) int {
		if a.PID != b.PID {
			return int(int64(a.PID) - int64(b.PID))
		}
		return strings.Compare(string(a.Kind), string(b.Kind))
	})
	return slices.CompactFunc(out, func(a, b Process) bool { return a.PID == b.PID && a.Kind == b.Kind }), nil
}

func processes(infos []nvml.ProcessInfo, kind ProcessKind) []Process {
	out := make([]Process, 0, len(infos))
	for _, p := range infos {
		out = append(out, Process{PID: p.Pid, UsedMemoryBytes: usedMemory(p.UsedGpuMemory), Kind: kind})
	}
	return out
}

// usedMemory hides NVML's "not available" value (all ones), which it reports
// under WDDM and for processes in other containers on some drivers.
func usedMemory(v uint64) uint64 {
	if v == ^uint64(0) {
		return 0
	}
	return v
}
