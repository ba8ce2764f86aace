// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package preflight is the agent image's preflight mode: `kquant-agent
// preflight --recipes nvfp4,mxfp8`, an init container of any GPU workload
// that validates recipes on exactly the GPUs the kubelet gave its pod before
// the workload starts, and keeps the pod in Init:Error when one fails.
//
// Recipes are resolved by name (Resolve): from the mounted recipe file
// first (ReadFile: QuantRecipes or ClusterQuantRecipes, and at most one
// QuantJob whose mode, level, workload, execution and tolerances replace the
// defaults), then from the cluster's ClusterQuantRecipe catalog when the
// pod's service account may read it, then from the catalog built into the
// binary (config/catalog). Without a QuantJob the settings are a Quick
// Validation of one 1024x2048 gradient tensor whose bytes must equal the
// reference backend's (SettingsFor).
//
// The GPUs are what NVML shows inside the container: the device plugin's or
// DRA driver's allocation decides it (NVIDIA_VISIBLE_DEVICES or CDI), so the
// check covers exactly the pod's GPUs, each visible MIG device as one. Each
// recipe runs on each GPU through the same measurement harness as a run pod
// (bench.Runner), the GPUs at once, and the log names the GPUs and times
// each phase: NVML, each GPU's backend (CUDA context and kernels), each
// recipe. There is no GPU guard as in a run pod: an init container runs
// before its pod's other containers, and the kubelet gives the pod's GPUs to
// no other pod (unless time-slicing or MPS shares them, which kquant
// measures and does not isolate).
//
// The Outcome is the worst verdict of the checks (Fail, Warn, Skip, Pass).
// Only Fail stops the workload. A GPU that cannot be checked at all (none
// visible, unhealthy, a CUDA error) is a Fail with a reason of its own
// (ReasonNoGPU, ReasonGPUUnhealthy, ReasonCheckError).
// Outcome.TerminationMessage is what the kubelet shows as the container's
// termination message: runoutcome's summary line, then a Document with one
// check per recipe and GPU, cut to the kubelet's 4 KiB by dropping results,
// passing checks, messages and checks in that order.
//
// A Recorder, when the pod's service account may, records each check as a
// finished QuantRun labelled v1alpha1.LabelPreflight (field manager
// kquant-preflight) and the verdict as an Event on the pod. The manager
// ignores such runs, and an admission policy keeps every identity but
// kquant's own to runs with that label, so that a preflight's result is never
// taken for a manager-owned run's (docs/security.md).
package preflight
