// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package quantjob is the QuantJob controller: it resolves the job's recipe,
// expands the job into QuantRuns (one per slot: one for AnyGPU, one per
// eligible node for EachNode, one per eligible GPU for EachGPU), retries failed
// runs (their own failures up to backoffLimit, disruptions such as a lost
// node or an eviction up to disruptionLimit, as v1alpha1.IsRunDisruption
// tells them apart), enforces activeDeadlineSeconds and
// ttlSecondsAfterFinished, deletes orphaned runs, and owns the job's whole
// status: counts, progress, summary, phase and conditions. Binding runs to GPUs
// is the binder's job (package binder): the job's first runs are created
// already bound where the binder can bind them at once (Binder), and retries
// are created unbound for its pass; failing runs of lost nodes is
// nodelifecycle's.
//
// Runs are named <job>-<slot>-<attempt>. A slot keeps its target (node, GPU)
// in annotations, and each retry carries the GPUs and nodes its slot failed
// on, so the binder places it elsewhere when it can. Every run of a job shares
// the recipe snapshot taken when the job expanded: editing the recipe later
// changes no run of the job, retries included.
//
// Every run change reconciles the job, mostly before the job's last status
// write has reached the cache. The controller therefore remembers the status
// it last wrote (and its resourceVersion) until the cache shows it, and the
// runs it created until the cache lists them. It writes the status at most
// once per reconcile, only when it differs from what was last written, and
// never from a view that is behind its own writes.
package quantjob
