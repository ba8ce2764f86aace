// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package runmode executes one QuantRun inside its run pod: `kquant-agent run
// --run=<ns>/<name>`, the agent image started by the controller
// (domain/runpod.Build) on the run's node with the one GPU the kubelet
// allocated to it.
//
// Execute reads the run with the pod's own service account and waits, within
// a bound, until the run's status.runPod names this pod: the manager records
// the pod right after creating it, and until then the run-pod admission
// policy refuses the pod's writes (its token's pod-uid must be the recorded
// one). A run that records another pod is left alone (ErrNotRecorded). It
// then finds the GPU through NVML inside the pod (the container sees exactly
// the device the device plugin or the DRA driver gave it; more than one
// fails the run),
// records Running and status.allocatedGPU (UUID, the node's index when it is
// the GPU the run was bound to, the MIG device, the source), runs the same
// guarded runner as the in-agent executor (gpuguard.Guarded around the
// measurement harness), and records the end: Succeeded with the results
// whatever the verdict, or Failed with a reason. It writes only the run
// pod's fields of apply.QuantRunStatusOwners, under the field manager
// "kquant-run", each write conditional on the resourceVersion its decision
// was made on.
//
// Reasons it writes (api/v1alpha1/quantrun_reasons.go): GPUInUse when the
// guard found another process on the GPU (retryable), RunPodLost when the
// pod was asked to stop (SIGTERM, ErrTerminated as the context's cause;
// retryable, and never left Running), RunPodFailed when the pod cannot run at
// all (no GPU visible, the wrong node) or the runner failed.
//
// The final write (finish) retries every error that a later try may get
// past, connection errors and conflicts alike, with capped exponential
// backoff until the run's time limit; only a refusal that cannot change
// (Forbidden, NotFound, Invalid) stops it. The caller writes
// Outcome.TerminationMessage to the container's termination log whether the
// write landed or not: the outcome and the results that fit
// (internal/runoutcome), from which the execution controller records a run
// whose own write never landed (runpod.PodOutcome).
//
// Where the guard runs. NVML reports host PIDs in every container (the
// driver is not PID-namespace aware), so a process must know its own host
// PID to tell itself from others. The run pod learns it without hostPID:
// before its first CUDA call it holds no context, so the pre-start check
// (gpuguard.Check) must find no process at all; right after its context is
// created the one process NVML lists on the GPU is the pod's own
// (gpuguard.Guard.Learn; two at once fail as GPUInUse). The periodic check
// (gpuguard.Watch) then accepts exactly that PID. The whole guard thus runs
// in the unprivileged run pod, and neither the run pod nor the agent
// DaemonSet needs hostPID.
package runmode
