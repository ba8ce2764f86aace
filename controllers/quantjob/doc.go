// Package quantjob is the QuantJob controller: it resolves the job's recipe,
// expands the job into QuantRuns (one per slot: one for AnyGPU, one per
// eligible node for EachNode, one per eligible GPU for EachGPU), retries failed
// runs up to backoffLimit, enforces activeDeadlineSeconds and
// ttlSecondsAfterFinished, deletes orphaned runs, and owns the job's whole
// status: counts, progress, summary, phase and conditions. Binding runs to GPUs
// is the binder's job (package binder); failing runs of lost nodes is
// nodelifecycle's.
//
// Runs are named <job>-<slot>-<attempt>. A slot keeps its target (node, GPU)
// in annotations, and each retry carries the GPUs and nodes its slot failed
// on, so the binder places it elsewhere when it can. Every run of a job shares
// the recipe snapshot taken when the job expanded: editing the recipe later
// changes no run of the job, retries included.
package quantjob
