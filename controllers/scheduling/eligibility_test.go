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
		Lease:   builders.MakeLease(LeaseName(prof.Name), "kquant-system").RenewedAt(testNow.Add(-5 * time.Second)).Obj(),
		Labels:  labels,
	}
}

func mustRequirements(t *testing.T, scheme kquantv1alpha1.Scheme, job *kquantv1alpha1.QuantJob) Requirements {
	t.Helper()
	req, err := NewRequirements(scheme, &job.Spec.Placement)
	if err != nil {
		t.Fatalf("NewRequirements: %v", err)
	}
	return req
}

func TestEvaluateNode(t *testing.T) {
	expired := node(builders.MakeGPUNodeProfile("h").GPUs(builders.H100, 2).Ready(), nil)
	expired.Lease = builders.MakeLease(LeaseName("h"), "kquant-system").RenewedAt(testNow.Add(-time.Minute)).Obj()
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

func TestNewRequirementsRejectsBadSelector(t *testing.T) {
	job := builders.MakeQuantJob("j", "ns").Obj()
	job.Spec.Placement.NodeSelector = &metav1LabelSelectorBad
	if _, err := NewRequirements(kquantv1alpha1.SchemeMXFP8BlockScaling, &job.Spec.Placement); err == nil {
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
	if got, want := UnschedulableMessage(nil), "0/0 nodes: no GPUNodeProfile exists (is the kquant agent running?)"; got != want {
		t.Errorf("UnschedulableMessage(nil) = %q, want %q", got, want)
	}
}

func TestExpand(t *testing.T) {
	gpus := func(spec ...string) []GPU {
		var out []GPU
		for _, n := range spec {
			for i := range 2 {
				out = append(out, GPU{Node: n, Index: int32(i), UUID: builders.GPUUUID(n, i)})
			}
		}
		return out
	}
	cases := map[string]struct {
		policy kquantv1alpha1.PlacementPolicy
		gpus   []GPU
		want   []Slot
	}{
		"AnyGPU is one untargeted slot": {policy: kquantv1alpha1.PlacementAnyGPU, gpus: gpus("a", "b"), want: []Slot{{Index: 0}}},
		"EachNode is one slot per node": {policy: kquantv1alpha1.PlacementEachNode, gpus: gpus("a", "b"),
			want: []Slot{{Index: 0, TargetNode: "a"}, {Index: 1, TargetNode: "b"}}},
		"EachGPU interleaves nodes": {policy: kquantv1alpha1.PlacementEachGPU, gpus: gpus("a", "b"),
			want: []Slot{
				{Index: 0, TargetNode: "a", TargetGPU: "GPU-a-0"}, {Index: 1, TargetNode: "b", TargetGPU: "GPU-b-0"},
				{Index: 2, TargetNode: "a", TargetGPU: "GPU-a-1"}, {Index: 3, TargetNode: "b", TargetGPU: "GPU-b-1"},
			}},
		"nothing eligible, no slots": {policy: kquantv1alpha1.PlacementEachGPU},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Expand(tc.policy, tc.gpus)); diff != "" {
				t.Errorf("Expand() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAssign(t *testing.T) {
	fleet := func(nodes ...string) []GPU {
		var out []GPU
		for _, n := range nodes {
			for i := range 2 {
				out = append(out, GPU{Node: n, Index: int32(i), UUID: builders.GPUUUID(n, i)})
			}
		}
		return out
	}
	cases := map[string]struct {
		pending []PendingRun
		jobs    map[string]*JobCapacity
		busy    []string
		want    []Binding
	}{
		"spreads a job over nodes": {
			pending: []PendingRun{{Name: "r0", Job: "j"}, {Name: "r1", Job: "j"}, {Name: "r2", Job: "j"}},
			jobs:    map[string]*JobCapacity{"j": {Free: 3, Eligible: fleet("a", "b")}},
			want: []Binding{
				{Run: "r0", GPU: fleet("a")[0]}, {Run: "r1", GPU: fleet("b")[0]}, {Run: "r2", GPU: fleet("a")[1]},
			},
		},
		"never takes a busy GPU": {
			pending: []PendingRun{{Name: "r0", Job: "j", TargetGPU: "GPU-a-0"}, {Name: "r1", Job: "j"}},
			jobs:    map[string]*JobCapacity{"j": {Free: 8, Eligible: fleet("a")}},
			busy:    []string{"GPU-a-0"},
			want:    []Binding{{Run: "r1", GPU: fleet("a")[1]}},
		},
		"stops at maxParallel": {
			pending: []PendingRun{{Name: "r0", Job: "j"}, {Name: "r1", Job: "j"}},
			jobs:    map[string]*JobCapacity{"j": {Free: 1, Eligible: fleet("a")}},
			want:    []Binding{{Run: "r0", GPU: fleet("a")[0]}},
		},
		"first come first served": {
			pending: []PendingRun{{Name: "old", Job: "old"}, {Name: "new", Job: "new"}},
			jobs:    map[string]*JobCapacity{"old": {Free: 1, Eligible: fleet("a")[:1]}, "new": {Free: 1, Eligible: fleet("a")[:1]}},
			want:    []Binding{{Run: "old", GPU: fleet("a")[0]}},
		},
		"younger job backfills what the older cannot use": {
			pending: []PendingRun{{Name: "old", Job: "old"}, {Name: "new", Job: "new"}},
			jobs:    map[string]*JobCapacity{"old": {Free: 1, Eligible: fleet("a")[:1]}, "new": {Free: 1, Eligible: fleet("a")}},
			want:    []Binding{{Run: "old", GPU: fleet("a")[0]}, {Run: "new", GPU: fleet("a")[1]}},
		},
		"retry avoids the GPU it failed on": {
			pending: []PendingRun{{Name: "r", Job: "j", Avoid: []string{"GPU-a-0"}, AvoidNodes: []string{"a"}}},
			jobs:    map[string]*JobCapacity{"j": {Free: 1, Eligible: fleet("a", "b")}},
			want:    []Binding{{Run: "r", GPU: fleet("b")[0]}},
		},
		"retry takes the failed GPU when nothing else fits": {
			pending: []PendingRun{{Name: "r", Job: "j", Avoid: []string{"GPU-a-0"}}},
			jobs:    map[string]*JobCapacity{"j": {Free: 1, Eligible: fleet("a")[:1]}},
			want:    []Binding{{Run: "r", GPU: fleet("a")[0]}},
		},
		"targeted to a node": {
			pending: []PendingRun{{Name: "r", Job: "j", TargetNode: "b"}},
			jobs:    map[string]*JobCapacity{"j": {Free: 1, Eligible: fleet("a", "b")}},
			want:    []Binding{{Run: "r", GPU: fleet("b")[0]}},
		},
		"job without capacity entry is skipped": {
			pending: []PendingRun{{Name: "r", Job: "gone"}},
			jobs:    map[string]*JobCapacity{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			busy := map[string]bool{}
			for _, b := range tc.busy {
				busy[b] = true
			}
			got := Assign(tc.pending, tc.jobs, busy)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Assign() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

var metav1LabelSelectorBad = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "pool", Operator: "Sideways"}}}
