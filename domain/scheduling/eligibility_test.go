// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package scheduling

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
)

var testNow = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func node(p *builders.GPUNodeProfileWrapper, labels map[string]string) NodeState {
	prof := p.Obj()
	return NodeState{
		Profile: prof,
		Lease:   builders.MakeLease(kquantv1alpha1.AgentLeaseName(prof.Name), "kquant-system").RenewedAt(testNow.Add(-5 * time.Second)).Obj(),
		Labels:  labels,
	}
}

func mustRequirements(t *testing.T, scheme kquantv1alpha1.Scheme, job *kquantv1alpha1.QuantJob) Requirements {
	t.Helper()
	req, err := NewRequirements(&kquantv1alpha1.QuantRecipeSpec{Scheme: scheme}, &job.Spec.Placement)
	if err != nil {
		t.Fatalf("NewRequirements: %v", err)
	}
	return req
}

func TestEvaluateNode(t *testing.T) {
	expired := node(builders.MakeGPUNodeProfile("h").GPUs(builders.H100, 2).Ready(), nil)
	expired.Lease = builders.MakeLease(kquantv1alpha1.AgentLeaseName("h"), "kquant-system").RenewedAt(testNow.Add(-time.Minute)).Obj()
	noLease := node(builders.MakeGPUNodeProfile("h").GPUs(builders.H100, 2).Ready(), nil)
	noLease.Lease = nil

	cases := map[string]struct {
		node       NodeState
		scheme     kquantv1alpha1.Scheme
		job        *kquantv1alpha1.QuantJob
		wantGPUs   int
		wantReason string
		wantMsg    string
	}{
		"hopper runs FP8 natively": {
			node: node(builders.MakeGPUNodeProfile("h").GPUs(builders.H100, 8).Ready(), nil), scheme: kquantv1alpha1.SchemeFloat8CurrentScaling,
			job: builders.MakeQuantJob("j", "ns").RequireNative().Obj(), wantGPUs: 8,
		},
		"hopper emulates MXFP8 when native is not required": {
			node: node(builders.MakeGPUNodeProfile("h").GPUs(builders.H100, 8).Ready(), nil), scheme: kquantv1alpha1.SchemeMXFP8BlockScaling,
			job: builders.MakeQuantJob("j", "ns").Obj(), wantGPUs: 8,
		},
		"hopper lacks native MXFP8": {
			node: node(builders.MakeGPUNodeProfile("h").GPUs(builders.H100, 8).Ready(), nil), scheme: kquantv1alpha1.SchemeMXFP8BlockScaling,
			job:        builders.MakeQuantJob("j", "ns").RequireNative().Obj(),
			wantReason: ReasonNotNative, wantMsg: "lack native MXFP8 (compute capability 9.0 < 10.0)",
		},
		"RTX PRO 6000 lacks native MXFP8 for its own reason": {
			node: node(builders.MakeGPUNodeProfile("r").GPUs(builders.RTXPro6000, 1).Ready(), nil), scheme: kquantv1alpha1.SchemeMXFP8BlockScaling,
			job:        builders.MakeQuantJob("j", "ns").RequireNative().Obj(),
			wantReason: ReasonNotNative, wantMsg: "lack native MXFP8 (compute capability 12.0: MXFP8 (for all gemm layouts) is not supported on 12.0+ architectures yet)",
		},
		"profile not Ready": {
			node: node(builders.MakeGPUNodeProfile("h").GPUs(builders.H100, 2).NotReady(), nil), scheme: kquantv1alpha1.SchemeFloat8CurrentScaling,
			job: builders.MakeQuantJob("j", "ns").Obj(), wantReason: ReasonNodeNotReady, wantMsg: "are not Ready",
		},
		"driver upgrade in progress": {
			node: node(builders.MakeGPUNodeProfile("h").GPUs(builders.H100, 2).DriverUpgrading("drain-required"), nil), scheme: kquantv1alpha1.SchemeFloat8CurrentScaling,
			job: builders.MakeQuantJob("j", "ns").Obj(), wantReason: ReasonDriverUpgrade, wantMsg: "are upgrading their GPU driver",
		},
		"driver upgrade says so before an expired lease": {
			node: func() NodeState {
				n := node(builders.MakeGPUNodeProfile("h").GPUs(builders.H100, 2).DriverUpgrading("upgrade-failed"), nil)
				n.Lease = nil
				return n
			}(), scheme: kquantv1alpha1.SchemeFloat8CurrentScaling,
			job: builders.MakeQuantJob("j", "ns").Obj(), wantReason: ReasonDriverUpgrade, wantMsg: "are upgrading their GPU driver",
		},
		"driver upgrade done": {
			node: node(builders.MakeGPUNodeProfile("h").GPUs(builders.H100, 2).DriverUpgrading("drain-required").DriverUpgradeDone(), nil), scheme: kquantv1alpha1.SchemeFloat8CurrentScaling,
			job: builders.MakeQuantJob("j", "ns").Obj(), wantGPUs: 2,
		},
		"lease expired": {
			node: expired, scheme: kquantv1alpha1.SchemeFloat8CurrentScaling,
			job: builders.MakeQuantJob("j", "ns").Obj(), wantReason: ReasonLeaseExpired, wantMsg: "have no fresh agent Lease",
		},
		"no lease": {
			node: noLease, scheme: kquantv1alpha1.SchemeFloat8CurrentScaling,
			job: builders.MakeQuantJob("j", "ns").Obj(), wantReason: ReasonLeaseExpired, wantMsg: "have no fresh agent Lease",
		},
		"nodeSelector mismatch": {
			node: node(builders.MakeGPUNodeProfile("h").GPUs(builders.H100, 2).Ready(), map[string]string{"pool": "b"}), scheme: kquantv1alpha1.SchemeFloat8CurrentScaling,
			job: builders.MakeQuantJob("j", "ns").NodeSelector(map[string]string{"pool": "a"}).Obj(), wantReason: ReasonNodeSelectorMismatch, wantMsg: "do not match nodeSelector",
		},
		"nodeSelector matches": {
			node: node(builders.MakeGPUNodeProfile("h").GPUs(builders.H100, 2).Ready(), map[string]string{"pool": "a"}), scheme: kquantv1alpha1.SchemeFloat8CurrentScaling,
			job: builders.MakeQuantJob("j", "ns").NodeSelector(map[string]string{"pool": "a"}).Obj(), wantGPUs: 2,
		},
		"architecture filtered": {
			node: node(builders.MakeGPUNodeProfile("a").GPUs(builders.A100, 2).Ready(), nil), scheme: kquantv1alpha1.SchemeFloat8CurrentScaling,
			job:        builders.MakeQuantJob("j", "ns").Architectures(kquantv1alpha1.ArchitectureHopper, kquantv1alpha1.ArchitectureBlackwell).Obj(),
			wantReason: ReasonArchitecture, wantMsg: "have no Hopper or Blackwell GPU",
		},
		"compute capability compared as numbers": {
			node: node(builders.MakeGPUNodeProfile("b").GPUs(builders.B200, 2).Ready(), nil), scheme: kquantv1alpha1.SchemeFloat8CurrentScaling,
			job: builders.MakeQuantJob("j", "ns").MinComputeCapability("9.0").Obj(), wantGPUs: 2,
		},
		"compute capability too low": {
			node: node(builders.MakeGPUNodeProfile("l").GPUs(builders.L40S, 2).Ready(), nil), scheme: kquantv1alpha1.SchemeFloat8CurrentScaling,
			job:        builders.MakeQuantJob("j", "ns").MinComputeCapability("9.0").Obj(),
			wantReason: ReasonComputeCapability, wantMsg: "have no GPU with compute capability >= 9.0",
		},
		"unhealthy GPU skipped, healthy one eligible": {
			node: node(builders.MakeGPUNodeProfile("h").GPUs(builders.H100, 2).Unhealthy(0).Ready(), nil), scheme: kquantv1alpha1.SchemeFloat8CurrentScaling,
			job: builders.MakeQuantJob("j", "ns").Obj(), wantGPUs: 1,
		},
		"the closest GPU names the reason": {
			node: node(builders.MakeGPUNodeProfile("h").GPUs(builders.H100, 2).Unhealthy(0).Ready(), nil), scheme: kquantv1alpha1.SchemeNVFP4BlockScaling,
			job:        builders.MakeQuantJob("j", "ns").RequireNative().Obj(),
			wantReason: ReasonNotNative, wantMsg: "lack native NVFP4 (compute capability 9.0 < 10.0)",
		},
		"no GPUs": {
			node: node(builders.MakeGPUNodeProfile("e").Ready(), nil), scheme: kquantv1alpha1.SchemeFloat8CurrentScaling,
			job: builders.MakeQuantJob("j", "ns").Obj(), wantReason: ReasonNoGPUs, wantMsg: "have no GPUs",
		},
		"a MIG-enabled GPU is left out without the opt-in": {
			node: node(builders.MakeGPUNodeProfile("m").GPUs(builders.H100, 1).MIG(0, "3g.40gb", "2g.20gb").Ready(), nil), scheme: kquantv1alpha1.SchemeFloat8CurrentScaling,
			job:        builders.MakeQuantJob("j", "ns").Obj(),
			wantReason: ReasonMIGNotIncluded, wantMsg: "have only MIG-enabled GPUs, whose slices need spec.placement.migSlices: Include",
		},
		"with the opt-in each MIG device is a unit, beside whole GPUs": {
			node: node(builders.MakeGPUNodeProfile("m").GPUs(builders.H100, 2).MIG(1, "3g.40gb", "2g.20gb", "2g.20gb").Ready(), nil), scheme: kquantv1alpha1.SchemeFloat8CurrentScaling,
			job: builders.MakeQuantJob("j", "ns").MIGSlices().Obj(), wantGPUs: 4,
		},
		"a MIG-enabled GPU without MIG devices has nothing to run on": {
			node: node(builders.MakeGPUNodeProfile("m").GPUs(builders.H100, 1).MIG(0).Ready(), nil), scheme: kquantv1alpha1.SchemeFloat8CurrentScaling,
			job:        builders.MakeQuantJob("j", "ns").MIGSlices().Obj(),
			wantReason: ReasonNoMIGDevices, wantMsg: "have MIG-enabled GPUs without MIG devices",
		},
		"a recipe the GPU cannot run says so before MIG": {
			node: node(builders.MakeGPUNodeProfile("m").GPUs(builders.H100, 1).MIG(0, "7g.80gb").Ready(), nil), scheme: kquantv1alpha1.SchemeNVFP4BlockScaling,
			job:        builders.MakeQuantJob("j", "ns").RequireNative().Obj(),
			wantReason: ReasonNotNative, wantMsg: "lack native NVFP4 (compute capability 9.0 < 10.0)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := mustRequirements(t, tc.scheme, tc.job)
			got := EvaluateNode(&tc.node, &req, testNow)
			if len(got.GPUs) != tc.wantGPUs || got.Reason != tc.wantReason || got.Message != tc.wantMsg {
				t.Errorf("EvaluateNode() = %d GPUs, %q, %q; want %d GPUs, %q, %q", len(got.GPUs), got.Reason, got.Message, tc.wantGPUs, tc.wantReason, tc.wantMsg)
			}
		})
	}
}

func TestMIGUnits(t *testing.T) {
	n := node(builders.MakeGPUNodeProfile("m").GPUs(builders.H100, 2).MIG(0, "3g.40gb", "2g.20gb").Ready(), nil)
	without := mustRequirements(t, kquantv1alpha1.SchemeFloat8CurrentScaling, builders.MakeQuantJob("j", "ns").Obj())
	res := Evaluate([]NodeState{n}, &without, testNow)
	if got := MIGSkippedNote(res); got != "1 MIG-enabled GPUs left out (their slices need spec.placement.migSlices: Include)" {
		t.Errorf("MIGSkippedNote = %q", got)
	}
	with := mustRequirements(t, kquantv1alpha1.SchemeFloat8CurrentScaling, builders.MakeQuantJob("j", "ns").MIGSlices().Obj())
	res = Evaluate([]NodeState{n}, &with, testNow)
	want := []GPU{
		{Node: "m", Index: 0, UUID: builders.MIGUUID("m", 0, 0), Product: builders.H100.Name, MIGProfile: "3g.40gb"},
		{Node: "m", Index: 0, UUID: builders.MIGUUID("m", 0, 1), Product: builders.H100.Name, MIGProfile: "2g.20gb"},
		{Node: "m", Index: 1, UUID: builders.GPUUUID("m", 1), Product: builders.H100.Name},
	}
	if diff := cmp.Diff(want, EligibleGPUs(res)); diff != "" || MIGSkippedNote(res) != "" {
		t.Errorf("eligible units (-want +got):\n%s\nnote %q", diff, MIGSkippedNote(res))
	}
	if slots := Expand(kquantv1alpha1.PlacementEachGPU, EligibleGPUs(res)); len(slots) != 3 {
		t.Errorf("EachGPU over 2 MIG devices and a whole GPU: %d slots, want 3", len(slots))
	}
	if RequirementKey(&kquantv1alpha1.QuantRecipeSpec{Scheme: kquantv1alpha1.SchemeFloat8CurrentScaling}, &builders.MakeQuantJob("j", "ns").Obj().Spec.Placement) ==
		RequirementKey(&kquantv1alpha1.QuantRecipeSpec{Scheme: kquantv1alpha1.SchemeFloat8CurrentScaling}, &builders.MakeQuantJob("j", "ns").MIGSlices().Obj().Spec.Placement) {
		t.Error("the opt-in does not change the requirement key")
	}
}

func TestNewRequirementsRejectsBadSelector(t *testing.T) {
	job := builders.MakeQuantJob("j", "ns").Obj()
	job.Spec.Placement.NodeSelector = &metav1LabelSelectorBad
	if _, err := NewRequirements(&kquantv1alpha1.QuantRecipeSpec{Scheme: kquantv1alpha1.SchemeMXFP8BlockScaling}, &job.Spec.Placement); err == nil {
		t.Error("NewRequirements() with operator Sideways: got nil error")
	}
}

func TestUnschedulableMessage(t *testing.T) {
	var nodes []NodeState
	for _, n := range []string{"h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8"} {
		nodes = append(nodes, node(builders.MakeGPUNodeProfile(n).GPUs(builders.H100, 8).Ready(), map[string]string{"pool": "train"}))
	}
	for _, n := range []string{"b1", "b2", "b3", "b4"} {
		nodes = append(nodes, node(builders.MakeGPUNodeProfile(n).GPUs(builders.B200, 8).Ready(), map[string]string{"pool": "serve"}))
	}
	job := builders.MakeQuantJob("j", "ns").RequireNative().NodeSelector(map[string]string{"pool": "train"}).Obj()
	req := mustRequirements(t, kquantv1alpha1.SchemeMXFP8BlockScaling, job)
	results := Evaluate(nodes, &req, testNow)
	if got := EligibleGPUs(results); len(got) != 0 {
		t.Fatalf("EligibleGPUs() = %d, want 0", len(got))
	}
	want := "0/12 nodes: 8 lack native MXFP8 (compute capability 9.0 < 10.0), 4 do not match nodeSelector"
	if got := UnschedulableMessage(results); got != want {
		t.Errorf("UnschedulableMessage() = %q, want %q", got, want)
	}
	upgrading := append(nodes[:0:0], nodes[:2]...)
	upgrading = append(upgrading, node(builders.MakeGPUNodeProfile("u1").GPUs(builders.H100, 8).DriverUpgrading("drain-required"), map[string]string{"pool": "train"}))
	results = Evaluate(upgrading, &req, testNow)
	if got, want := UnschedulableMessage(results), "0/3 nodes: 2 lack native MXFP8 (compute capability 9.0 < 10.0), 1 are upgrading their GPU driver"; got != want {
		t.Errorf("UnschedulableMessage() with an upgrading node = %q, want %q", got, want)
	}
	if got, want := UnschedulableMessage(nil), "0/0 nodes: no GPUNodeProfile exists (is the kquant agent running?)"; got != want {
		t.Errorf("UnschedulableMessage(nil) = %q, want %q", got, want)
	}
}

var metav1LabelSelectorBad = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "pool", Operator: "Sideways"}}}
