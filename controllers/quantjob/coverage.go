// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantjob

import (
	"maps"
	"slices"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/quantrun"
)

// MaxCoverageAttempts bounds the attempts of one EachGPU slot that reruns
// only because the kubelet gave its runs GPUs that other slots had covered.
const MaxCoverageAttempts = 4

// rerun is an EachGPU slot to run again, on a target GPU that no succeeded
// run executed on.
type rerun struct {
	slot int
	// node and gpu are the new attempt's target.
	node, gpu string
}

// uncoveredSlots are the EachGPU slots to run again: under the device plugin
// the kubelet picks the GPU, so a slot bound to GPU k may execute on a free GPU
// j. EachGPU means "every GPU of the node, each once, as it becomes free":
// the job needs one succeeded run executed on each target GPU, whichever slot
// ran it. A target GPU is uncovered when no succeeded run executed on it and
// every slot aimed at it has finished (it executed elsewhere). Each uncovered
// GPU takes one duplicate: a slot whose latest run succeeded off its own
// target, on a GPU another slot's succeeded run also covered. That slot runs
// again on the uncovered GPU, its own target when that is the one uncovered,
// else any: when the kubelet hands out GPUs in a chain (slot 0 for GPU 0 ran
// on GPU 2, slot 2 for GPU 2 on GPU 1, where slot 1 ran too), GPU 0 is
// covered only by moving slot 2's duplicate there. Otherwise the results
// stand, attributed to the GPU each run executed on. Slots that already had
// MaxCoverageAttempts attempts keep their duplicate.
func uncoveredSlots(job *kquantv1alpha1.QuantJob, slots map[int]*slot) []rerun {
	if job.Spec.Placement.Policy != kquantv1alpha1.PlacementEachGPU {
		return nil
	}
	covered := map[string]int{}
	targetNode := map[string]string{}
	pending := map[string]bool{} // targets a slot still works toward
	for _, s := range slots {
		run := s.latest
		target := run.Annotations[quantrun.AnnotationTargetGPU]
		if run.Status.Phase == kquantv1alpha1.RunPhaseSucceeded {
			covered[quantrun.ExecutedGPU(run)]++
		} else if target != "" {
			pending[target] = true
		}
		if target != "" {
			targetNode[target] = run.Annotations[quantrun.AnnotationTargetNode]
		}
	}
	var uncovered []string
	for _, gpu := range slices.Sorted(maps.Keys(targetNode)) {
		if covered[gpu] == 0 && !pending[gpu] {
			uncovered = append(uncovered, gpu)
		}
	}
	if len(uncovered) == 0 {
		return nil
	}
	order := slices.Sorted(maps.Keys(slots))
	moved := map[int]bool{}
	var out []rerun
	// take moves slot i's duplicate to gpu when it has one.
	take := func(i int, gpu string) bool {
		run := slots[i].latest
		executed := quantrun.ExecutedGPU(run)
		if moved[i] || run.Status.Phase != kquantv1alpha1.RunPhaseSucceeded || executed == run.Annotations[quantrun.AnnotationTargetGPU] ||
			covered[executed] < 2 || run.Spec.Attempt+1 >= MaxCoverageAttempts {
			return false
		}
		covered[executed]--
		moved[i] = true
		out = append(out, rerun{slot: i, node: targetNode[gpu], gpu: gpu})
		return true
	}
	// place gives gpu the first duplicate among the slots that may take it.
	place := func(gpu string, may func(i int) bool) bool {
		for _, i := range order {
			if may(i) && take(i, gpu) {
				return true
			}
		}
		return false
	}
	// First the slots aimed at an uncovered GPU, then any duplicate.
	var rest []string
	for _, gpu := range uncovered {
		if !place(gpu, func(i int) bool { return slots[i].latest.Annotations[quantrun.AnnotationTargetGPU] == gpu }) {
			rest = append(rest, gpu)
		}
	}
	for _, gpu := range rest {
		place(gpu, func(int) bool { return true })
	}
	return out
}
