// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Command manager runs kquant's controllers: recipe status, job expansion and
// capability-aware binding of runs to GPUs, retries, lost nodes, deadlines,
// TTLs, summaries, and Node labels. It runs as a Deployment with leader
// election; see package controllers for what each controller does.
//
// --gpu-allocation says how runs get their GPU: DevicePlugin (the default) or
// DRA run each bound run in a run pod started from --run-image (the agent
// image); None leaves runs to the agents. The --run-*, --gpu-resource-name,
// --mig-resource-prefix, --dra-* and --allow-shared-gpus flags carry the
// chart's runPods and dra values.
//
//	kquant-manager --leader-elect --lease-namespace=kquant-system --run-image=ghcr.io/kquant/kquant-agent:v0.1.0
//	kquant-manager --gpu-allocation=None   # in-agent execution, nodes drained of other GPU work
//	kquant-manager --version
//	kquant-manager --apply-crds=/crds
//	kquant-manager --uninstall --lease-namespace=kquant-system --uninstall-pod-selector=app.kubernetes.io/instance=kquant
package main
