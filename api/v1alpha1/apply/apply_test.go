// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package apply

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kquant/kquant/api/v1alpha1"
)

// sameJSON fails unless got and want encode to the same JSON object.
func sameJSON(t *testing.T, got, want any) {
	t.Helper()
	var g, w map[string]any
	for _, p := range []struct {
		v   any
		out *map[string]any
	}{{got, &g}, {want, &w}} {
		b, err := json.Marshal(p.v)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, p.out); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("apply configuration encodes differently from the typed value (-typed +apply):\n%s", diff)
	}
}

func TestRunResultsEncodeAsTheTypedValue(t *testing.T) {
	yes, no := true, false
	oh := &v1alpha1.Overhead{HostEagerMicros: "1.5", HostGraphMicros: "2", KernelsPerStep: 3, PointerLoadMicros: "0.5"}
	perf := &v1alpha1.Performance{GPUMicros: "10", BandwidthGBps: "3000", FractionOfCopyBandwidth: "0.9"}
	cases := map[string]*v1alpha1.RunResults{
		"every field": {
			Backend: "cuda", Usage: v1alpha1.UsageRowwise, Capability: &v1alpha1.Capability{Native: true, Reason: "r"},
			Graph: &v1alpha1.GraphResult{Capturable: true}, Overhead: oh, Performance: perf,
			Accuracy: &v1alpha1.Accuracy{BitExactVsReference: &yes, SNRdB: "31", MaxAbsError: "0.1", Saturated: 2, FlushedToZero: 1},
			Shapes:   []v1alpha1.ShapeResult{{Rows: 1, Cols: 2, Overhead: oh, Performance: perf, Accuracy: &v1alpha1.Accuracy{BitExactVsReference: &no}}, {}},
			Verdict:  v1alpha1.VerdictPass, Reason: v1alpha1.VerdictReasonPass,
			Baselines: &v1alpha1.Baselines{LaunchMicros: "2.1", GraphLaunchMicros: "1.5", CopyBandwidthGBps: "3000.0"},
		},
		"zero values that are serialised": {Capability: &v1alpha1.Capability{}, Graph: &v1alpha1.GraphResult{}, Shapes: []v1alpha1.ShapeResult{}},
		"empty":                           {},
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			// The apply value carries the numeric mirrors of the decimals.
			want := r.DeepCopy()
			want.Numbers = v1alpha1.NumbersOf(r)
			sameJSON(t, RunResults(r), want)
		})
	}
}

func TestGPUNodeProfileStatusEncodesAsTheTypedValue(t *testing.T) {
	now := metav1.NewTime(time.Unix(1700000000, 0))
	rs := []v1alpha1.RecipeSupport{{Scheme: v1alpha1.SchemeMXFP8BlockScaling, Support: v1alpha1.SupportEmulated, Reason: "r"}, {}}
	cases := map[string]*v1alpha1.GPUNodeProfileStatus{
		"every field": {
			ObservedGeneration: 2, GPUCount: 1, DriverVersion: "580", CUDADriverVersion: "13.0", Backend: v1alpha1.BackendCUDA,
			Simulated: true, Recipes: rs, AgentVersion: "v1",
			GPUs: []v1alpha1.GPU{{Index: 0, UUID: "GPU-1", Product: "H100", ComputeCapability: "9.0", Architecture: v1alpha1.ArchitectureHopper,
				MemoryMiB: 80, MIGMode: v1alpha1.MIGEnabled, MIGModePending: v1alpha1.MIGDisabled, Health: v1alpha1.HealthHealthy, HealthMessage: "m", Recipes: rs,
				MIGDevices: []v1alpha1.MIGDevice{{UUID: "MIG-1", GPUInstanceID: new(int32(1)), ComputeInstanceID: new(int32(0)), Profile: "1g.10gb", MemoryMiB: 9856}, {}},
				Allocations: []v1alpha1.GPUAllocation{{Namespace: "ml", Pod: "train", Container: "main", Source: v1alpha1.AllocationSourceDRA,
					ResourceName: "gpu.nvidia.com", Claim: "ml/train-gpu", Shared: true, MIGDevice: "MIG-1"}, {}}}, {}},
			Baselines:  &v1alpha1.Baselines{LaunchMicros: "2", GraphLaunchMicros: "1", CopyBandwidthGBps: "3000"},
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, LastTransitionTime: now, Reason: "R", Message: "m"}, {}},
		},
		"empty": {},
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) { sameJSON(t, gpuNodeProfileStatus(s), s) })
	}
}

func TestAllocatedGPUEncodesAsTheTypedValue(t *testing.T) {
	idx := int32(0)
	cases := map[string]*v1alpha1.AllocatedGPU{
		"every field": {UUID: "GPU-1", Index: &idx, MIGDevice: "MIG-2", Source: v1alpha1.AllocationSourceDevicePlugin},
		"empty":       {},
	}
	for name, g := range cases {
		t.Run(name, func(t *testing.T) { sameJSON(t, AllocatedGPU(g), g) })
	}
}

func TestRunPodEncodesAsTheTypedValue(t *testing.T) {
	ref := &v1alpha1.RunPodReference{Name: "job-0-0", UID: "6f1c0b4e-0000-4000-8000-000000000001"}
	sameJSON(t, RunPod(ref), ref)
	if RunPod(nil) != nil {
		t.Error("RunPod(nil) is not nil")
	}
}

func TestOwners(t *testing.T) {
	if !Owns(ManagerAgent, "results") || !Owns(ManagerController, "results") || !Owns(ManagerController, "reason") || Owns(ManagerAgent, "reason") {
		t.Errorf("QuantRunStatusOwners() = %v", QuantRunStatusOwners())
	}
	// The run pod writes its run's outcome and the GPU it got, never the
	// agent's conditions.
	for _, f := range []string{"phase", "startTime", "completionTime", "agentID", "allocatedGPU", "results", "reason", "message"} {
		if !Owns(ManagerRunPod, f) {
			t.Errorf("the run pod does not own %s", f)
		}
	}
	// Only the manager, which made the run pod, says which pod it is.
	if Owns(ManagerRunPod, "runPod") || Owns(ManagerAgent, "runPod") || !Owns(ManagerController, "runPod") {
		t.Errorf("QuantRunStatusOwners() = %v", QuantRunStatusOwners())
	}
	if Owns(ManagerRunPod, "conditions") || Owns(ManagerController, "allocatedGPU") {
		t.Errorf("QuantRunStatusOwners() = %v", QuantRunStatusOwners())
	}
	// A preflight records finished checks: never a binding, a pod or the
	// agent's conditions.
	for _, f := range []string{"bindTime", "runPod", "conditions"} {
		if Owns(ManagerPreflight, f) {
			t.Errorf("the preflight owns %s", f)
		}
	}
}

func TestControllerStatusesEncodeAsTheTypedValues(t *testing.T) {
	now := metav1.NewTime(time.Unix(1700000000, 0))
	conds := []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, LastTransitionTime: now, Reason: "R", Message: "m"}}
	stat := &v1alpha1.Stat{Min: "1", Median: "2", Max: "3"}
	cases := map[string]struct{ apply, typed any }{
		"job, every field": {
			apply: quantJobStatus(&v1alpha1.QuantJobStatus{
				ObservedGeneration: 2, Phase: v1alpha1.JobPhaseRunning, Total: 4, Pending: 1, Running: 1, Succeeded: 1, Failed: 1,
				Disruptions: 1, WaitingForGPU: 1, Progress: "1/4", StartTime: &now, CompletionTime: &now, Conditions: conds,
				Summary: &v1alpha1.JobSummary{BandwidthGBps: stat, GPUMicros: stat, HostEagerMicros: stat, HostGraphMicros: stat, SNRdB: stat,
					Verdicts: v1alpha1.VerdictCounts{Pass: 1, Fail: 2, Warn: 3, Skip: 4}, Medians: &v1alpha1.ResultNumbers{SNRdB: "31.5"},
					Outliers: []v1alpha1.Outlier{{Run: "r", NodeName: "n", GPUUUID: "GPU-1", Product: "H100", Metric: "snrDB", Value: "1", Median: "2"}, {}}},
			}),
			typed: &v1alpha1.QuantJobStatus{
				ObservedGeneration: 2, Phase: v1alpha1.JobPhaseRunning, Total: 4, Pending: 1, Running: 1, Succeeded: 1, Failed: 1,
				Disruptions: 1, WaitingForGPU: 1, Progress: "1/4", StartTime: &now, CompletionTime: &now, Conditions: conds,
				Summary: &v1alpha1.JobSummary{BandwidthGBps: stat, GPUMicros: stat, HostEagerMicros: stat, HostGraphMicros: stat, SNRdB: stat,
					Verdicts: v1alpha1.VerdictCounts{Pass: 1, Fail: 2, Warn: 3, Skip: 4}, Medians: &v1alpha1.ResultNumbers{SNRdB: "31.5"},
					Outliers: []v1alpha1.Outlier{{Run: "r", NodeName: "n", GPUUUID: "GPU-1", Product: "H100", Metric: "snrDB", Value: "1", Median: "2"}, {}}},
			},
		},
		"job, zero counts are written": {apply: quantJobStatus(&v1alpha1.QuantJobStatus{Summary: &v1alpha1.JobSummary{}}), typed: &v1alpha1.QuantJobStatus{Summary: &v1alpha1.JobSummary{}}},
		"recipe": {
			apply: quantRecipeStatus(&v1alpha1.QuantRecipeStatus{ObservedGeneration: 1, Key: "k", Format: v1alpha1.FormatE4M3,
				Nodes: v1alpha1.RecipeNodeCounts{Native: 1, Emulated: 2}, Conditions: conds}),
			typed: &v1alpha1.QuantRecipeStatus{ObservedGeneration: 1, Key: "k", Format: v1alpha1.FormatE4M3,
				Nodes: v1alpha1.RecipeNodeCounts{Native: 1, Emulated: 2}, Conditions: conds},
		},
		"recipe, zero counts are written": {apply: quantRecipeStatus(&v1alpha1.QuantRecipeStatus{}), typed: &v1alpha1.QuantRecipeStatus{}},
		"gate policy": {
			apply: quantGatePolicyStatus(&v1alpha1.QuantGatePolicyStatus{ObservedGeneration: 1, JobNamespace: "kquant-system", CurrentJob: "c",
				LastJob: "l", LastValidationTime: &now, GatedCount: 2, Conditions: conds,
				GatedNodes: []v1alpha1.GatedNode{{Node: "n", Family: "fp8", GPU: "GPU-1", Run: "r", Since: &now}, {}}}),
			typed: &v1alpha1.QuantGatePolicyStatus{ObservedGeneration: 1, JobNamespace: "kquant-system", CurrentJob: "c",
				LastJob: "l", LastValidationTime: &now, GatedCount: 2, Conditions: conds,
				GatedNodes: []v1alpha1.GatedNode{{Node: "n", Family: "fp8", GPU: "GPU-1", Run: "r", Since: &now}, {}}},
		},
		"gate policy, empty": {apply: quantGatePolicyStatus(&v1alpha1.QuantGatePolicyStatus{}), typed: &v1alpha1.QuantGatePolicyStatus{}},
		"cron job": {
			apply: quantCronJobStatus(&v1alpha1.QuantCronJobStatus{Active: []string{"a"}, LastScheduleTime: &now, LastSuccessfulTime: &now,
				NodeDrivers: []v1alpha1.NodeDriver{{NodeName: "n", DriverVersion: "580", CUDADriverVersion: "13.0"}, {}}, Conditions: conds}),
			typed: &v1alpha1.QuantCronJobStatus{Active: []string{"a"}, LastScheduleTime: &now, LastSuccessfulTime: &now,
				NodeDrivers: []v1alpha1.NodeDriver{{NodeName: "n", DriverVersion: "580", CUDADriverVersion: "13.0"}, {}}, Conditions: conds},
		},
		"cron job, empty": {apply: quantCronJobStatus(&v1alpha1.QuantCronJobStatus{}), typed: &v1alpha1.QuantCronJobStatus{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { sameJSON(t, tc.apply, tc.typed) })
	}
}
