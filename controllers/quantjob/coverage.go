package quantjob

import (
	"maps"
	"slices"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/quantrun"
)

// MaxCoverageAttempts bounds the attempts of one EachGPU slot that reruns
// only because the kubelet gave its runs GPUs that other slots had covered.
const MaxCoverageAttempts = 4

// uncoveredSlots are the EachGPU slots to run again: under the device plugin
// the kubelet picks the GPU, so a slot bound to GPU k may execute on a free GPU
// j. EachGPU means "every GPU of the node, each once, as it becomes free":
// the job needs one succeeded run executed on each target GPU, whichever slot
// ran it. A slot is run again when its latest run succeeded on another GPU
// than its target, that GPU was also covered by another slot's succeeded run
// (a duplicate), and its own target is covered by none; otherwise the results
// stand, attributed to the GPU the run executed on. Slots that already had
// MaxCoverageAttempts attempts keep their duplicate.
func uncoveredSlots(job *kquantv1alpha1.QuantJob, slots map[int]*slot) []int {
	if job.Spec.Placement.Policy != kquantv1alpha1.PlacementEachGPU {
		return nil
	}
	covered := map[string]int{}
	for _, s := range slots {
		if s.latest.Status.Phase == kquantv1alpha1.RunPhaseSucceeded {
			covered[quantrun.ExecutedGPU(s.latest)]++
		}
	}
	var out []int
	for _, i := range slices.Sorted(maps.Keys(slots)) {
		run := slots[i].latest
		target := run.Annotations[quantrun.AnnotationTargetGPU]
		executed := quantrun.ExecutedGPU(run)
		if run.Status.Phase != kquantv1alpha1.RunPhaseSucceeded || target == "" || executed == target ||
			covered[target] > 0 || covered[executed] < 2 || run.Spec.Attempt+1 >= MaxCoverageAttempts {
			continue
		}
		// This slot's result is the duplicate: its GPU keeps the other's.
		covered[executed]--
		out = append(out, i)
	}
	return out
}
