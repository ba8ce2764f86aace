// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package execution is the controller that executes bound QuantRuns in run
// pods (issue 17): for every bound, unfinished run it ensures what the run pod
// needs (the run pods' PriorityClass, the namespace's run ServiceAccount and
// its RoleBinding, the DRA claim in DRA mode) and the run pod itself, built by
// runpod.Build, and it maps the run pod's state back to the run through
// runpod.PodOutcome: waiting reasons (WaitingForGPU, RunPodUnschedulable,
// RunPodWaiting) on a Pending run, and the failures the run pod cannot report
// itself (RunPodLost, RunPodFailed, GPUInUse, RunPodExitedWithoutResult). The
// job controller retries failed runs within backoffLimit.
//
// Right after creating a run pod it records it in the run's status.runPod
// (name and UID; also for a pod it finds unrecorded after a restart): the
// run-pod admission policy lets only a token bound to that pod write the
// run's status, and the pod waits for the record before its first write. A
// recorded pod that is gone is lost, and a pod named like the run that is
// not controlled by it, runs as another ServiceAccount or is not the
// recorded one is removed as stale.
//
// The run pod writes Running, the results and status.allocatedGPU under its
// own field manager (kquant-run); this controller writes only the
// controller's fields of apply.QuantRunStatusOwners, through
// runstatus.Apply. One of them is the results, on one path: a run pod
// that ended its run and exited without its own write landing (the API
// server was away for as long as it retried) left the outcome in its
// termination message, and this controller records it (event
// RecordedFromRunPod), conditional on the run still unfinished as read; a
// run whose pod's write landed is finished, and is not written again.
//
// A run pod that was seen and is gone is a loss (RunPodLost). A bound run that
// never had one gets one, even when it is already Running: that is a run left
// running by the in-agent execution of an earlier release, or a run pod lost
// while no manager watched, and its new run pod starts it over
// (RunPodRestarted). "Seen" is remembered in memory (a pod this process
// created and its cache does not show yet is looked up on the API server
// itself: there, or lost), and across manager restarts by the run's
// status.allocatedGPU.source, which only a run pod writes.
//
// With gpuAllocation None the controller is not registered: the agent runs
// the runs itself.
package execution
