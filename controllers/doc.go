// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package controllers wires kquant's controllers into a controller-runtime
// manager, in one place (SetupControllers), as Kueue does: indexes first, then
// metrics, then each controller with its dependencies passed in. Nothing
// registers itself in init.
//
// The reconcilers, one package and one concern each, none importing another:
//
//	quantrecipe    recipe validation, status.key, node counts
//	quantjob       job expansion into runs, retries, deadlines, TTL, status
//	binder         binding pending runs to free GPUs, fleet-wide (never to a
//	               GPU the kubelet allocated to another pod), WaitingForGPU
//	execution      each bound run's run pod (gpuAllocation DevicePlugin or
//	               DRA; not registered for None), its status mapped back
//	nodelifecycle  failing runs of nodes whose agent Lease expired (NodeLost)
//	nodelabels     kquant.dev/{fp8,fp8-block,mxfp8,nvfp4} labels on Nodes
//	gate           gate.kquant.dev/<family> labels, taints and conditions
//	gatepolicy     QuantGatePolicy: its validation jobs and status
//	idlevalidation a QuantGatePolicy's validations of nodes left idle
//	quantcronjob   QuantCronJob: jobs on a schedule and on driver changes
//
// What only they share is under controllers/internal: fleet (reading
// profiles, Leases and Node labels from the cache), indexer (every field
// index), runstatus (the controller's run status write), nodewriter (every
// write to a Node), conflict (quiet retries of lost write races),
// expectations and memo (what they remember beside the cache); and metrics. What every side knows of an object (run
// names, summaries, placement, the run pod, gates, a gate policy's job) is
// in domain/.
//
// Log verbosity follows internal/logging's ladder: Info for transitions a
// user cares about (job phases, lost nodes), Debug for each write
// (bindings, label patches), Trace for status details.
package controllers
