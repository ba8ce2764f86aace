// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package builders

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// QuantJobWrapper builds a QuantJob.
type QuantJobWrapper struct{ kquantv1alpha1.QuantJob }

// MakeQuantJob starts a Validation job at level Quick that quantizes one
// 1024x1024 tensor on any GPU, referring to a recipe of its own name.
func MakeQuantJob(name, ns string) *QuantJobWrapper {
	return &QuantJobWrapper{kquantv1alpha1.QuantJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: kquantv1alpha1.QuantJobSpec{
			RecipeRef: kquantv1alpha1.RecipeReference{Name: name},
			Mode:      kquantv1alpha1.JobModeValidation,
			Level:     kquantv1alpha1.LevelQuick,
			Workload: kquantv1alpha1.Workload{
				Operation: kquantv1alpha1.OperationQuantize,
				Shapes:    []kquantv1alpha1.Shape{{Rows: 1024, Cols: 1024}},
			},
			Placement: kquantv1alpha1.Placement{Policy: kquantv1alpha1.PlacementAnyGPU},
		},
	}}
}

// Recipe sets recipeRef.name.
func (w *QuantJobWrapper) Recipe(name string) *QuantJobWrapper {
	w.Spec.RecipeRef.Name = name
	return w
}

// ClusterRecipe references the ClusterQuantRecipe name.
func (w *QuantJobWrapper) ClusterRecipe(name string) *QuantJobWrapper {
	w.Spec.RecipeRef = kquantv1alpha1.RecipeReference{Kind: kquantv1alpha1.RecipeKindCluster, Name: name}
	return w
}

// Benchmark sets mode Benchmark.
func (w *QuantJobWrapper) Benchmark() *QuantJobWrapper {
	w.Spec.Mode = kquantv1alpha1.JobModeBenchmark
	return w
}

// Level sets the level.
func (w *QuantJobWrapper) Level(l kquantv1alpha1.Level) *QuantJobWrapper {
	w.Spec.Level = l
	return w
}

// Shape replaces the workload's shapes with one rows x cols shape.
func (w *QuantJobWrapper) Shape(rows, cols int64) *QuantJobWrapper {
	w.Spec.Workload.Shapes = []kquantv1alpha1.Shape{{Rows: rows, Cols: cols}}
	return w
}

// AddShape appends a rows x cols shape to the workload.
func (w *QuantJobWrapper) AddShape(rows, cols int64) *QuantJobWrapper {
	w.Spec.Workload.Shapes = append(w.Spec.Workload.Shapes, kquantv1alpha1.Shape{Rows: rows, Cols: cols})
	return w
}

// Iterations sets execution.iterations and execution.warmup.
func (w *QuantJobWrapper) Iterations(iters, warmup int32) *QuantJobWrapper {
	w.Spec.Execution.Iterations = ptr.To(iters)
	w.Spec.Execution.Warmup = ptr.To(warmup)
	return w
}

// Graphs sets execution.graphs.
func (w *QuantJobWrapper) Graphs(m kquantv1alpha1.GraphMode) *QuantJobWrapper {
	w.Spec.Execution.Graphs = m
	return w
}

// Policy sets placement.policy.
func (w *QuantJobWrapper) Policy(p kquantv1alpha1.PlacementPolicy) *QuantJobWrapper {
	w.Spec.Placement.Policy = p
	return w
}

// AnyGPU sets placement.policy AnyGPU.
func (w *QuantJobWrapper) AnyGPU() *QuantJobWrapper {
	w.Spec.Placement.Policy = kquantv1alpha1.PlacementAnyGPU
	return w
}

// EachNode sets placement.policy EachNode.
func (w *QuantJobWrapper) EachNode() *QuantJobWrapper {
	w.Spec.Placement.Policy = kquantv1alpha1.PlacementEachNode
	return w
}

// EachGPU sets placement.policy EachGPU.
func (w *QuantJobWrapper) EachGPU() *QuantJobWrapper {
	w.Spec.Placement.Policy = kquantv1alpha1.PlacementEachGPU
	return w
}

// MIGSlices sets placement.migSlices: Include.
func (w *QuantJobWrapper) MIGSlices() *QuantJobWrapper {
	w.Spec.Placement.MIGSlices = kquantv1alpha1.MIGSlicesInclude
	return w
}

// RequireNative sets placement.requireNative.
func (w *QuantJobWrapper) RequireNative() *QuantJobWrapper {
	w.Spec.Placement.RequireNative = true
	return w
}

// Architectures sets placement.architectures.
func (w *QuantJobWrapper) Architectures(a ...kquantv1alpha1.Architecture) *QuantJobWrapper {
	w.Spec.Placement.Architectures = a
	return w
}

// MinComputeCapability sets placement.minComputeCapability.
func (w *QuantJobWrapper) MinComputeCapability(cc string) *QuantJobWrapper {
	w.Spec.Placement.MinComputeCapability = cc
	return w
}

// NodeSelector sets placement.nodeSelector to match labels.
func (w *QuantJobWrapper) NodeSelector(labels map[string]string) *QuantJobWrapper {
	w.Spec.Placement.NodeSelector = &metav1.LabelSelector{MatchLabels: labels}
	return w
}

// MaxParallel sets placement.maxParallel.
func (w *QuantJobWrapper) MaxParallel(n int32) *QuantJobWrapper {
	w.Spec.Placement.MaxParallel = ptr.To(n)
	return w
}

// MaxRuns sets placement.maxRuns.
func (w *QuantJobWrapper) MaxRuns(n int32) *QuantJobWrapper {
	w.Spec.Placement.MaxRuns = ptr.To(n)
	return w
}

// BackoffLimit sets backoffLimit.
func (w *QuantJobWrapper) BackoffLimit(n int32) *QuantJobWrapper {
	w.Spec.BackoffLimit = ptr.To(n)
	return w
}

// DisruptionLimit sets disruptionLimit.
func (w *QuantJobWrapper) DisruptionLimit(n int32) *QuantJobWrapper {
	w.Spec.DisruptionLimit = ptr.To(n)
	return w
}

// ActiveDeadline sets activeDeadlineSeconds.
func (w *QuantJobWrapper) ActiveDeadline(d time.Duration) *QuantJobWrapper {
	w.Spec.ActiveDeadlineSeconds = ptr.To(int64(d / time.Second))
	return w
}

// TTLAfterFinished sets ttlSecondsAfterFinished.
func (w *QuantJobWrapper) TTLAfterFinished(d time.Duration) *QuantJobWrapper {
	w.Spec.TTLSecondsAfterFinished = ptr.To(int32(d / time.Second))
	return w
}

// MinSNRdB sets tolerances.minSNRdB.
func (w *QuantJobWrapper) MinSNRdB(db string) *QuantJobWrapper {
	w.Spec.Tolerances.MinSNRdB = db
	return w
}

// ControlledBy makes policy the job's controller, as the policy controller
// does for its validation jobs (an owner reference with controller: true).
func (w *QuantJobWrapper) ControlledBy(policy *kquantv1alpha1.QuantGatePolicy) *QuantJobWrapper {
	w.OwnerReferences = append(w.OwnerReferences, metav1.OwnerReference{
		APIVersion: kquantv1alpha1.GroupVersion.String(), Kind: "QuantGatePolicy",
		Name: policy.Name, UID: policy.UID, Controller: ptr.To(true),
	})
	return w
}

// Obj returns the job.
func (w *QuantJobWrapper) Obj() *kquantv1alpha1.QuantJob { return &w.QuantJob }

// YAML is the job as a manifest for kubectl apply.
func (w *QuantJobWrapper) YAML() string {
	job := w.DeepCopy()
	job.TypeMeta = metav1.TypeMeta{APIVersion: kquantv1alpha1.GroupVersion.String(), Kind: "QuantJob"}
	data, err := yaml.Marshal(job)
	if err != nil {
		// A QuantJob always marshals; a failure here is a bug in the types.
		panic(fmt.Sprintf("marshalling QuantJob %s: %v", job.Name, err))
	}
	return string(data)
}

// MakeSlowBenchmark is an eager 2048x2048 FP8 current-scaling quantize
// benchmark in which each iteration takes about 50 ms on the reference
// backend: with enough iterations a run lasts long enough to kill a process
// while it executes. It uses the catalog recipe fp8-current-scaling.
func MakeSlowBenchmark(name, ns string, iterations int32) *QuantJobWrapper {
	return MakeQuantJob(name, ns).Recipe("fp8-current-scaling").Benchmark().Level(kquantv1alpha1.LevelQuick).
		Shape(2048, 2048).Iterations(iterations, 1).Graphs(kquantv1alpha1.GraphModeEager)
}
