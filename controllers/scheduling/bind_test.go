package scheduling

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kquant/kquant/test/builders"
)

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
