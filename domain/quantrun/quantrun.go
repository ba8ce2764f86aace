// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantrun

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// Annotations the controller keeps on runs, for the controller only.
const (
	// AnnotationSlot is the run's slot in its job: attempts of one slot share it.
	AnnotationSlot = "kquant.dev/slot"
	// AnnotationTargetNode pins the slot to a node (EachNode, EachGPU).
	AnnotationTargetNode = "kquant.dev/target-node"
	// AnnotationTargetGPU pins the slot to a GPU UUID (EachGPU).
	AnnotationTargetGPU = "kquant.dev/target-gpu"
	// AnnotationAvoidGPUs lists, comma-separated, the GPUs where earlier
	// attempts of the slot failed; the binder goes elsewhere when it can.
	AnnotationAvoidGPUs = "kquant.dev/avoid-gpus"
	// AnnotationAvoidNodes lists the nodes of those GPUs.
	AnnotationAvoidNodes = "kquant.dev/avoid-nodes"
	// AnnotationProduct is the product of the GPU the run was bound to, kept so
	// that the job's summary can group runs by product after nodes are gone.
	AnnotationProduct = "kquant.dev/gpu-product"
	// AnnotationBindTime is when the run was bound, written with the binding.
	AnnotationBindTime = kquantv1alpha1.AnnotationBindTime
)

// LabelKueueQueue names a Kueue LocalQueue: on a QuantJob, the queue of its
// run pods; copied to its runs and from them to the run pods.
const LabelKueueQueue = "kueue.x-k8s.io/queue-name"

// maxNameLength is the longest object name the API server takes.
const maxNameLength = 253

// Name is the deterministic name of attempt of slot of job: <job>-<slot>-<attempt>.
// Deterministic names make creation idempotent: a stale cache that makes the
// controller create the same run twice gets AlreadyExists, never a duplicate.
// Over-long job names are shortened with a hash so names stay unique and valid.
func Name(job string, slot, attempt int) string {
	suffix := fmt.Sprintf("-%d-%d", slot, attempt)
	if len(job)+len(suffix) <= maxNameLength {
		return job + suffix
	}
	sum := sha256.Sum256([]byte(job))
	h := hex.EncodeToString(sum[:])[:10]
	keep := maxNameLength - len(suffix) - len(h) - 1
	return strings.TrimRight(job[:keep], "-.") + "-" + h + suffix
}

// JobLabelValue is the value of the kquant.dev/job label for job: the name,
// or a hashed short form when the name is longer than a label value may be.
func JobLabelValue(job string) string {
	if len(job) <= 63 {
		return job
	}
	sum := sha256.Sum256([]byte(job))
	return strings.TrimRight(job[:52], "-._") + "-" + hex.EncodeToString(sum[:])[:10]
}

// IsBound reports whether run is bound to a GPU (it may have finished since).
func IsBound(run *kquantv1alpha1.QuantRun) bool { return run.Spec.GPUUUID != "" }

// IsActive reports whether run holds its GPU: bound and not finished, whatever
// its stored phase says (Pending until the agent starts it).
func IsActive(run *kquantv1alpha1.QuantRun) bool {
	return IsBound(run) && !run.Status.Phase.IsTerminal()
}

// IsWaiting reports whether run waits for a GPU.
func IsWaiting(run *kquantv1alpha1.QuantRun) bool {
	return !IsBound(run) && !run.Status.Phase.IsTerminal()
}

// Phase is run's phase as the controllers see it. The stored phase stays
// Pending (or unset, on runs created before the CRD defaulted it) until the
// agent starts the run, also once the run is bound, because binding is one
// spec write; Phase reports such a bound run as Bound.
func Phase(run *kquantv1alpha1.QuantRun) kquantv1alpha1.RunPhase {
	switch run.Status.Phase {
	case "", kquantv1alpha1.RunPhasePending:
		if IsBound(run) {
			return kquantv1alpha1.RunPhaseBound
		}
		return kquantv1alpha1.RunPhasePending
	}
	return run.Status.Phase
}

// StoredPhase is run's stored phase, Pending when unset (runs created before
// the CRD defaulted it).
func StoredPhase(run *kquantv1alpha1.QuantRun) kquantv1alpha1.RunPhase {
	if run.Status.Phase == "" {
		return kquantv1alpha1.RunPhasePending
	}
	return run.Status.Phase
}

// Slot is run's slot, -1 when the annotation is missing or malformed.
func Slot(run *kquantv1alpha1.QuantRun) int {
	s, err := strconv.Atoi(run.Annotations[AnnotationSlot])
	if err != nil {
		return -1
	}
	return s
}

// SplitList splits a comma-separated annotation value.
func SplitList(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// ExecutedGPU is the unit of work run executed on: the GPU, or the MIG
// device, its run pod got from the kubelet (status.allocatedGPU), which under
// the device plugin may differ from the bound spec.gpuUUID; the bound one
// when the run has not said.
func ExecutedGPU(run *kquantv1alpha1.QuantRun) string {
	if a := run.Status.AllocatedGPU; a != nil && a.MIGDevice != "" {
		return a.MIGDevice
	}
	if a := run.Status.AllocatedGPU; a != nil && a.UUID != "" {
		return a.UUID
	}
	return run.Spec.GPUUUID
}
