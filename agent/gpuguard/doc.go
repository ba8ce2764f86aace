// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package gpuguard is the last guard of the run-pod model: before a run's
// first kernel, and periodically while it runs, NVML must show no process on
// the run's GPU other than the run's own. If one appears the run stops with
// ErrGPUInUse (reason GPUInUse) and is retried later; it never measures
// beside another workload, which would disturb that workload and make the
// run's numbers point at healthy hardware.
//
// Check asks NVML (github.com/NVIDIA/go-nvml, behind the Library seam so that
// its mock package drives the tests) for the compute, MPS-compute and
// graphics processes on the GPU named by UUID (a MIG device's UUID names the
// slice) and returns an *InUseError, which matches ErrGPUInUse, listing every
// PID that Allowed does not accept. Watch runs Check on a ticker and cancels
// a context, with the error as its cause, the first time a foreign process
// shows up.
//
// Where the check runs. The driver is not PID-namespace aware: NVML reports
// every process on the GPU by its PID in the host's namespace, whichever
// container asks. A run must therefore learn its own host PID to tell itself
// from others, and it can without privilege:
//   - before its first CUDA call the run holds no context, so every process
//     listed is foreign: Check with Self.Allowed() (nothing yet) is exact;
//   - right after it created its context, the one process listed is its own:
//     Learn records that host PID in Self (two new processes at once cannot
//     be told apart and fail as GPUInUse);
//   - while it runs, Watch with Self.Allowed() accepts exactly that PID.
//
// So the whole guard runs in the unprivileged run pod (Guarded around the
// run's runner.Runner, shared with in-agent execution, where one Self serves
// every GPU of the agent process), and neither the run pod nor the agent DaemonSet
// needs hostPID: giving it to run pods would need the privileged PodSecurity
// level in the users' namespaces, and an agent watching for them would need
// hostPID and each run pod's UID. PodProcesses (a host PID to its pod through
// /proc/<pid>/cgroup) remains for tools that do run with hostPID.
package gpuguard
