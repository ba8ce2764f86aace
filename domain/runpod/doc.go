// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package runpod turns a bound QuantRun into the objects that execute it on
// its GPU, and maps those objects' status back to the run. Everything here is
// a pure function of its inputs, table-tested without an API server; the
// execution controller (controllers/execution) creates what Build returns
// and applies what PodOutcome says, and the run-pod simulator of the scale
// tests (test/runpodsim) reads the same pods.
//
// A run pod is the agent image in run mode, `kquant-agent run --run=<ns>/<name>`:
// the same binary as the node DaemonSet, so a run pod measures with exactly
// the engine the agent was released with; it reads its QuantRun, executes it
// on the one GPU the kubelet gave it, writes the run's status under its own
// field manager and exits, releasing the GPU, its CUDA context and its memory.
//
// The kubelet allocates the GPU, in one of two ways (Allocation):
//   - DevicePlugin: `resources.limits: {nvidia.com/gpu: 1}`, or
//     `nvidia.com/mig-<profile>` for a MIG slice under the device plugin's
//     mixed strategy. The kubelet picks which GPU; the run records the UUID
//     it got.
//   - DRA: a resource.k8s.io/v1 ResourceClaim whose CEL selector pins the
//     run's GPU by UUID, referenced from the pod's resourceClaims. A claim
//     pinned to a busy GPU simply stays unallocated and the pod Pending.
//
// AllocationNone (in-agent execution, for nodes drained of other GPU work)
// has no run pod: Build refuses it with ErrNoRunPod.
//
// The pod is placed on the run's node through the scheduler, never with
// spec.nodeName: nodeName bypasses the scheduler, so a DRA claim would never
// be allocated and the scheduler's accounting of nvidia.com/gpu would be
// skipped (the kubelet would admit or reject the pod alone, with
// UnexpectedAdmissionError instead of a Pending pod that waits). The pin is
// the DaemonSet controller's: a required node affinity on the field
// metadata.name, which matches the node's name exactly, where the
// kubernetes.io/hostname label can differ from it on some providers.
//
// The pod is low priority with preemptionPolicy Never (PriorityClass), so it
// never preempts anyone and anyone may preempt it; the run pod of an idle
// validation (a run labelled kquant.dev/idle-validation, which its pod
// carries too) takes IdlePriorityClass instead, the lowest priority there is
// (PriorityClassFor), a 1 s termination grace and an exit at once on
// SIGTERM (ArgExitOnSIGTERM), since a preempting workload waits for its
// exit. It is unprivileged (non-root 65532, read-only root filesystem, no
// capabilities, RuntimeDefault seccomp, no hostPID), and it never sets NVIDIA_VISIBLE_DEVICES: with the container
// toolkit's env-var strategy that would expose every GPU while the kubelet
// counts one.
//
// The pod and its claim are owned by the run (controller reference), so they
// are garbage-collected with it, and both live in the run's namespace, since
// an owner reference cannot cross namespaces.
package runpod
