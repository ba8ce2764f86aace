// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package controllers wires kquant's controllers into a controller-runtime
// manager, in one place (SetupControllers), as Kueue does: indexes first, then
// metrics, then each controller with its dependencies passed in. Nothing
// registers itself in init.
//
// The controllers, one concern each:
//
//	quantrecipe    recipe validation, status.key, node counts
//	quantjob       job expansion into runs, retries, deadlines, TTL, status
//	binder         binding pending runs to free GPUs, fleet-wide (never to a
//	               GPU the kubelet allocated to another pod), WaitingForGPU
//	execution      each bound run's run pod (gpuAllocation DevicePlugin or
//	               DRA; not registered for None), its status mapped back
//	nodelifecycle  failing runs of nodes whose agent Lease expired (NodeLost)
//	nodelabels     kquant.dev/{fp8,fp8-block,mxfp8,nvfp4} labels on Nodes
//
// and what they share: runpod (the run pod, claim and PriorityClass as pure
// functions), scheduling (placement policy as pure functions),
// summary (min/median/max and outliers), fleet (reading profiles, Leases and
// Node labels from the cache), indexer (every field index), quantrun (run
// names, slot annotations, the controller's status writes), conflict (quiet
// retries of lost write races) and metrics.
//
// Log verbosity follows internal/logging's ladder: Info for transitions a
// user cares about (job phases, lost nodes), Debug for each write
// (bindings, label patches), Trace for status details.
package controllers
