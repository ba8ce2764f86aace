// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package binder is the controller that binds pending QuantRuns to GPUs, the
// way kube-scheduler binds Pods to nodes. It is a single loop over the whole
// fleet (every event maps to one request), because "at most one active run per
// GPU across all jobs" and "first come, first served across jobs" are global
// rules that concurrent per-job reconciles could only keep with locks.
//
// A binding is one write: a merge patch of the spec (nodeName, gpuUUID,
// gpuIndex) with the kquant.dev/node label and the kquant.dev/bind-time and
// gpu-product annotations, conditional on the run's resourceVersion. Status is
// not written: as a scheduled Pod, a bound run stays Pending until its agent
// starts it (quantrun.Phase derives Bound from the bound spec). Until the
// cache shows a binding, the binder remembers it as assumed (kube-scheduler's
// assume cache), so that a second pass on a stale cache never gives the same
// GPU twice. A binding records no Event: the job's own events report its
// runs together.
//
// Runs can also be created bound (BindAtCreation, called by the job
// controller for a job's first runs): when no run waits for a GPU, the same
// decision as a pass's (decide: scheduling.Assign over the job's eligible GPUs,
// its maxParallel and the free GPUs) is made for the runs about to be created,
// their spec carries the binding, and they are assumed until the cache shows
// them. A run then costs one write to exist bound instead of two. Passes and
// bindings at creation are ordered by one lock, each deciding on the other's
// assumptions; a pass assumes its bindings before it writes them.
//
// The GPUs that active runs hold are a set kept from the QuantRun informer's
// events (heldGPUs, registered by TrackRuns), not listed per decision: a
// binding at creation decides once per job, under the pass's lock, and a
// burst of jobs waited on that lock while each listed every active run. An
// assumption is forgotten once that set has seen its run bound, not as soon
// as the cache shows it, since the set is updated after the cache.
package binder
