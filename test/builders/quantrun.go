// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package builders

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// QuantRunWrapper builds a QuantRun, for tests of code that reads runs.
type QuantRunWrapper struct{ kquantv1alpha1.QuantRun }

// MakeQuantRun starts an unbound, Pending run of job, with a default
// Float8CurrentScaling snapshot.
func MakeQuantRun(name, ns, job string) *QuantRunWrapper {
	return &QuantRunWrapper{kquantv1alpha1.QuantRun{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{kquantv1alpha1.LabelJob: job}},
		Spec: kquantv1alpha1.QuantRunSpec{
			JobRef: kquantv1alpha1.JobReference{Name: job},
			Recipe: kquantv1alpha1.RecipeSnapshot{Name: job, Spec: kquantv1alpha1.QuantRecipeSpec{Scheme: kquantv1alpha1.SchemeFloat8CurrentScaling}},
			Mode:   kquantv1alpha1.JobModeValidation,
			Workload: kquantv1alpha1.Workload{
				Operation: kquantv1alpha1.OperationQuantize,
				Shapes:    []kquantv1alpha1.Shape{{Rows: 1024, Cols: 1024}},
			},
			Execution: kquantv1alpha1.Execution{Graphs: kquantv1alpha1.GraphModeBoth, Iterations: ptr.To[int32](20), Warmup: ptr.To[int32](3)},
		},
		Status: kquantv1alpha1.QuantRunStatus{Phase: kquantv1alpha1.RunPhasePending},
	}}
}

// Annotation sets an annotation.
func (w *QuantRunWrapper) Annotation(k, v string) *QuantRunWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[k] = v
	return w
}

// Bound binds the run to GPU index of node and sets phase Bound.
func (w *QuantRunWrapper) Bound(node string, index int) *QuantRunWrapper {
	w.Spec.NodeName = node
	w.Spec.GPUUUID = GPUUUID(node, index)
	w.Spec.GPUIndex = ptr.To(int32(index))
	w.Labels[kquantv1alpha1.LabelNode] = node
	w.Status.Phase = kquantv1alpha1.RunPhaseBound
	return w
}

// Allocated records that the run's pod got GPU index of node from the
// device plugin (status.allocatedGPU), as a run pod does.
func (w *QuantRunWrapper) Allocated(node string, index int) *QuantRunWrapper {
	w.Status.AllocatedGPU = &kquantv1alpha1.AllocatedGPU{UUID: GPUUUID(node, index), Index: ptr.To(int32(index)),
		Source: kquantv1alpha1.AllocationSourceDevicePlugin}
	return w
}

// Phase sets the phase.
func (w *QuantRunWrapper) Phase(p kquantv1alpha1.RunPhase) *QuantRunWrapper {
	w.Status.Phase = p
	return w
}

// Attempt sets the attempt.
func (w *QuantRunWrapper) Attempt(n int32) *QuantRunWrapper {
	w.Spec.Attempt = n
	return w
}

// RunPod records the run pod, as the manager does right after creating it
// (write it with testenv.CreateWithStatus: status is not stored on create).
func (w *QuantRunWrapper) RunPod(name string, uid types.UID) *QuantRunWrapper {
	w.Status.RunPod = &kquantv1alpha1.RunPodReference{Name: name, UID: uid}
	return w
}

// Results sets results with the headline numbers and the verdict.
func (w *QuantRunWrapper) Results(bandwidthGBps, eagerMicros, graphMicros, snrDB string, v kquantv1alpha1.Verdict) *QuantRunWrapper {
	w.Status.Results = SyntheticResults(bandwidthGBps, eagerMicros, graphMicros, snrDB, v)
	return w
}

// SyntheticResults are results as an agent writes them, with the given
// headline numbers.
func SyntheticResults(bandwidthGBps, eagerMicros, graphMicros, snrDB string, v kquantv1alpha1.Verdict) *kquantv1alpha1.RunResults {
	reason := kquantv1alpha1.VerdictReasonPass
	if v != kquantv1alpha1.VerdictPass {
		reason = "Synthetic" + string(v)
	}
	return &kquantv1alpha1.RunResults{
		Backend:     string(kquantv1alpha1.BackendReference),
		Capability:  &kquantv1alpha1.Capability{Native: true},
		Graph:       &kquantv1alpha1.GraphResult{Capturable: true, ReplayMatchesEager: true},
		Overhead:    &kquantv1alpha1.Overhead{HostEagerMicros: eagerMicros, HostGraphMicros: graphMicros, KernelsPerStep: 3},
		Performance: &kquantv1alpha1.Performance{GPUMicros: "10", BandwidthGBps: bandwidthGBps, FractionOfCopyBandwidth: "0.9"},
		Accuracy:    &kquantv1alpha1.Accuracy{SNRdB: snrDB, MaxAbsError: "0.0625"},
		Verdict:     v,
		Reason:      reason,
	}
}

// Completed sets phase Succeeded and the completion time.
func (w *QuantRunWrapper) Completed(t time.Time) *QuantRunWrapper {
	w.Status.Phase = kquantv1alpha1.RunPhaseSucceeded
	w.Status.CompletionTime = &metav1.Time{Time: t}
	return w
}

// Scheme sets the snapshot's recipe scheme.
func (w *QuantRunWrapper) Scheme(s kquantv1alpha1.Scheme) *QuantRunWrapper {
	w.Spec.Recipe.Spec.Scheme = s
	return w
}

// Obj returns the run.
func (w *QuantRunWrapper) Obj() *kquantv1alpha1.QuantRun { return &w.QuantRun }
