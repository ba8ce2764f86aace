// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Command agent is kquant's node agent, run as a DaemonSet on GPU nodes (or
// as many processes on one machine with --simulate and distinct
// --node-name). It discovers the node's GPUs and publishes its
// GPUNodeProfile, its Lease and the kubelet's GPU allocations
// (--execution=RunPod, the default: an observer that never creates a CUDA
// context), or also executes the QuantRuns bound to the node itself
// (--execution=None, for nodes drained of other GPU work).
//
// `agent run --run=<ns>/<name>` is run mode: the process a run pod starts,
// which executes one QuantRun on the GPU the kubelet gave the pod and exits 0
// when the run finished (any verdict), 1 when it could not run; SIGTERM
// records the run Failed (RunPodLost) first (see agent/runmode).
//
// `agent preflight --recipes=<name>,...` is preflight mode: an init
// container of any GPU workload that validates the named recipes on exactly
// the GPUs the kubelet gave its pod and exits 0 when they pass, 1 when one
// fails (the pod stays in Init:Error), 2 when it is misconfigured, as
// NVSentinel's preflight checks do; the verdict is in the termination
// message (see agent/preflight and docs/preflight.md).
//
// SIGTERM or SIGINT start a graceful shutdown (no new runs, running ones get
// --shutdown-grace to finish, the profile goes not Ready); a second signal
// stops at once.
package main
