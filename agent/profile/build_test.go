// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kquant/kquant/agent/nvml"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/capability"
)

var ignoreTimes = cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime")

func TestBuildHopperNode(t *testing.T) {
	node := &nvml.Node{
		DriverVersion:     "580.95.05",
		CUDADriverVersion: capability.V(13, 0),
		GPUs: []nvml.GPU{{
			Index: 0, UUID: "GPU-h", Product: "NVIDIA H200", ComputeCapability: capability.V(9, 0),
			MemoryMiB: 143771, MIGMode: v1alpha1.MIGDisabled, Health: v1alpha1.HealthHealthy,
		}},
	}
	got := Build(Input{Node: node, Backend: v1alpha1.BackendReference, AgentVersion: "v0.1.0", Now: time.Unix(100, 0)})
	recipes := []v1alpha1.RecipeSupport{
		{Scheme: v1alpha1.SchemeDelayedScaling, Support: v1alpha1.SupportNative},
		{Scheme: v1alpha1.SchemeFloat8CurrentScaling, Support: v1alpha1.SupportNative},
		{Scheme: v1alpha1.SchemeFloat8BlockScaling, Support: v1alpha1.SupportNative},
		{Scheme: v1alpha1.SchemeMXFP8BlockScaling, Support: v1alpha1.SupportEmulated, Reason: capability.ReasonMXFP8ComputeCapability},
		{Scheme: v1alpha1.SchemeNVFP4BlockScaling, Support: v1alpha1.SupportEmulated, Reason: capability.ReasonNVFP4ComputeCapability},
	}
	want := v1alpha1.GPUNodeProfileStatus{
		GPUs: []v1alpha1.GPU{{
			Index: 0, UUID: "GPU-h", Product: "NVIDIA H200", ComputeCapability: "9.0",
			Architecture: v1alpha1.ArchitectureHopper, MemoryMiB: 143771, MIGMode: v1alpha1.MIGDisabled,
			Health: v1alpha1.HealthHealthy, Recipes: recipes,
		}},
		GPUCount:          1,
		DriverVersion:     "580.95.05",
		CUDADriverVersion: "13.0",
		Backend:           v1alpha1.BackendReference,
		Recipes:           recipes,
		AgentVersion:      "v0.1.0",
		Conditions: []metav1.Condition{{
			Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonAgentReady, Message: "the agent takes runs",
		}},
	}
	if diff := cmp.Diff(want, got, ignoreTimes); diff != "" {
		t.Errorf("Build mismatch (-want +got):\n%s", diff)
	}
}

func TestBuildReadyCondition(t *testing.T) {
	gpu := nvml.GPU{Index: 0, UUID: "GPU-a", ComputeCapability: capability.V(8, 0)}
	cases := []struct {
		name       string
		in         Input
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{name: "GPUs make it Ready", in: Input{Node: &nvml.Node{GPUs: []nvml.GPU{gpu}}}, wantStatus: metav1.ConditionTrue, wantReason: ReasonAgentReady},
		{name: "no GPU is not Ready", in: Input{Node: &nvml.Node{}}, wantStatus: metav1.ConditionFalse, wantReason: ReasonNoGPUs},
		{name: "nil node is not Ready", in: Input{}, wantStatus: metav1.ConditionFalse, wantReason: ReasonNoGPUs},
		{name: "stopping is not Ready", in: Input{Node: &nvml.Node{GPUs: []nvml.GPU{gpu}}, Stopping: true}, wantStatus: metav1.ConditionFalse, wantReason: ReasonAgentStopping},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := Build(tc.in)
			if len(st.Conditions) != 1 || st.Conditions[0].Status != tc.wantStatus || st.Conditions[0].Reason != tc.wantReason {
				t.Errorf("conditions = %+v, want Ready %s %s", st.Conditions, tc.wantStatus, tc.wantReason)
			}
		})
	}
}

func TestBuildKeepsTransitionTimeWhileReadyHolds(t *testing.T) {
	node := &nvml.Node{GPUs: []nvml.GPU{{Index: 0, UUID: "GPU-a", ComputeCapability: capability.V(9, 0)}}}
	first := Build(Input{Node: node, Now: time.Unix(100, 0)})
	second := Build(Input{Node: node, Now: time.Unix(200, 0), Previous: &first})
	if got := second.Conditions[0].LastTransitionTime.Unix(); got != 100 {
		t.Errorf("transition time %d, want 100 (unchanged condition)", got)
	}
	third := Build(Input{Node: node, Now: time.Unix(300, 0), Previous: &second, Stopping: true})
	if got := third.Conditions[0].LastTransitionTime.Unix(); got != 300 {
		t.Errorf("transition time %d, want 300 (changed condition)", got)
	}
}

// TestBuildDriverUpgradeSequence follows one node through an upgrade: no
// DriverUpgrade condition before, True (and Ready False) during it, False
// after it, and still False, its transition kept, on the next refresh.
func TestBuildDriverUpgradeSequence(t *testing.T) {
	node := &nvml.Node{GPUs: []nvml.GPU{{Index: 0, UUID: "GPU-a", ComputeCapability: capability.V(9, 0)}}}
	type want struct {
		ready, upgrade metav1.ConditionStatus // "" when absent
		readyReason    string
		upgradeReason  string
		upgradeSince   int64
	}
	steps := []struct {
		name    string
		upgrade string
		want    want
	}{
		{name: "before", want: want{ready: metav1.ConditionTrue, readyReason: ReasonAgentReady}},
		{name: "upgrade required", upgrade: "upgrade-required", want: want{ready: metav1.ConditionFalse, readyReason: ReasonDriverUpgrade,
			upgrade: metav1.ConditionTrue, upgradeReason: ReasonUpgradeInProgress, upgradeSince: 1}},
		{name: "drain required", upgrade: "drain-required", want: want{ready: metav1.ConditionFalse, readyReason: ReasonDriverUpgrade,
			upgrade: metav1.ConditionTrue, upgradeReason: ReasonUpgradeInProgress, upgradeSince: 1}},
		{name: "done", want: want{ready: metav1.ConditionTrue, readyReason: ReasonAgentReady,
			upgrade: metav1.ConditionFalse, upgradeReason: ReasonUpgradeDone, upgradeSince: 3}},
		{name: "next refresh", want: want{ready: metav1.ConditionTrue, readyReason: ReasonAgentReady,
			upgrade: metav1.ConditionFalse, upgradeReason: ReasonUpgradeDone, upgradeSince: 3}},
	}
	var prev *v1alpha1.GPUNodeProfileStatus
	for i, s := range steps {
		st := Build(Input{Node: node, DriverUpgrade: s.upgrade, Now: time.Unix(int64(i), 0), Previous: prev})
		prev = &st
		var got want
		if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); c != nil {
			got.ready, got.readyReason = c.Status, c.Reason
		}
		if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDriverUpgrade); c != nil {
			got.upgrade, got.upgradeReason, got.upgradeSince = c.Status, c.Reason, c.LastTransitionTime.Unix()
		}
		if got != s.want {
			t.Errorf("%s: conditions %+v, want %+v", s.name, got, s.want)
		}
	}
}

func TestBuildMixedNodeKeepsPerGPUSupport(t *testing.T) {
	node := &nvml.Node{
		CUDADriverVersion: capability.V(13, 0),
		GPUs: []nvml.GPU{
			{Index: 0, UUID: "GPU-a", ComputeCapability: capability.V(8, 0)},
			{Index: 1, UUID: "GPU-b", ComputeCapability: capability.V(10, 0)},
		},
	}
	st := Build(Input{Node: node})
	if st.GPUs[0].Architecture != v1alpha1.ArchitectureAmpere || st.GPUs[1].Architecture != v1alpha1.ArchitectureBlackwell {
		t.Errorf("architectures %s, %s", st.GPUs[0].Architecture, st.GPUs[1].Architecture)
	}
	if got := st.GPUs[0].Recipes[3].Support; got != v1alpha1.SupportEmulated {
		t.Errorf("A100 MXFP8 %s, want Emulated", got)
	}
	if got := st.Recipes[3].Support; got != v1alpha1.SupportNative {
		t.Errorf("node MXFP8 %s, want Native (the B200)", got)
	}
}

func TestGPUPublishesMIGDevices(t *testing.T) {
	g := nvml.GPU{Index: 1, UUID: "GPU-m", ComputeCapability: capability.V(9, 0), MIGMode: v1alpha1.MIGEnabled, MIGModePending: v1alpha1.MIGDisabled,
		MIGDevices: []nvml.MIGDevice{
			{UUID: "MIG-a", GPUInstanceID: 1, ComputeInstanceID: 0, Profile: "3g.40gb", MemoryMiB: 40192},
			{UUID: "MIG-b", GPUInstanceID: -1, ComputeInstanceID: -1},
		}}
	got := GPU(g, capability.V(13, 0))
	want := []v1alpha1.MIGDevice{
		{UUID: "MIG-a", GPUInstanceID: new(int32(1)), ComputeInstanceID: new(int32(0)), Profile: "3g.40gb", MemoryMiB: 40192},
		{UUID: "MIG-b"},
	}
	if diff := cmp.Diff(want, got.MIGDevices); diff != "" || got.MIGMode != v1alpha1.MIGEnabled || got.MIGModePending != v1alpha1.MIGDisabled {
		t.Errorf("MIG %s pending %s, devices (-want +got):\n%s", got.MIGMode, got.MIGModePending, diff)
	}
}

// TestBuildFreeSince follows one GPU through the kubelet's allocations: free
// from the first read, held, freed again; and a node whose allocations are
// not read, where no GPU is called free.
func TestBuildFreeSince(t *testing.T) {
	node := &nvml.Node{GPUs: []nvml.GPU{{Index: 0, UUID: "GPU-a", ComputeCapability: capability.V(9, 0)}}}
	held := map[string][]v1alpha1.GPUAllocation{"GPU-a": {{Namespace: "ns", Pod: "train", Source: v1alpha1.AllocationSourceDevicePlugin}}}
	heldSlice := map[string][]v1alpha1.GPUAllocation{"GPU-a": {{Namespace: "ns", Pod: "infer", Source: v1alpha1.AllocationSourceDRA,
		MIGDevice: "MIG-1", Shared: true}}}
	free := map[string][]v1alpha1.GPUAllocation{}
	at := func(s int64) *metav1.Time { t := metav1.NewTime(time.Unix(s, 0)); return &t }
	steps := []struct {
		name          string
		now           int64
		allocations   map[string][]v1alpha1.GPUAllocation
		wantFreeSince *metav1.Time
	}{
		{name: "allocations not read yet", now: 100, allocations: nil, wantFreeSince: nil},
		{name: "first read finds it free", now: 110, allocations: free, wantFreeSince: at(110)},
		{name: "still free keeps the time", now: 120, allocations: free, wantFreeSince: at(110)},
		{name: "a pod takes it", now: 130, allocations: held, wantFreeSince: nil},
		{name: "freed again", now: 140, allocations: free, wantFreeSince: at(140)},
		{name: "a MIG slice through DRA holds it too", now: 150, allocations: heldSlice, wantFreeSince: nil},
		{name: "free once more", now: 160, allocations: free, wantFreeSince: at(160)},
		{name: "allocations no longer read", now: 170, allocations: nil, wantFreeSince: nil},
	}
	var prev *v1alpha1.GPUNodeProfileStatus
	for _, step := range steps {
		st := Build(Input{Node: node, Now: time.Unix(step.now, 0), Previous: prev, Allocations: step.allocations})
		if diff := cmp.Diff(step.wantFreeSince, st.GPUs[0].FreeSince); diff != "" {
			t.Errorf("%s: freeSince mismatch (-want +got):\n%s", step.name, diff)
		}
		prev = &st
	}
}
