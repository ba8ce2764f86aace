// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package scheduling

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
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
			got := Assign(tc.pending, tc.jobs, BusySet(busy))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Assign() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// naiveAssign is Assign as it was before pools: every run scans its job's
// whole Eligible list. Assign must choose exactly the same.
func naiveAssign(pending []PendingRun, jobs map[string]*JobCapacity, busy map[string]bool) []Binding {
	var out []Binding
	for i := range pending {
		pr := &pending[i]
		jc := jobs[pr.Job]
		if jc == nil || jc.Free <= 0 {
			continue
		}
		best, found := GPU{}, false
		for _, g := range jc.Eligible {
			if busy[g.UUID] || (pr.TargetNode != "" && g.Node != pr.TargetNode) || (pr.TargetGPU != "" && g.UUID != pr.TargetGPU) {
				continue
			}
			if !found || better(g, best, pr, jc.ActiveByNode) {
				best, found = g, true
			}
		}
		if !found {
			continue
		}
		busy[best.UUID] = true
		jc.Free--
		if jc.ActiveByNode == nil {
			jc.ActiveByNode = map[string]int{}
		}
		jc.ActiveByNode[best.Node]++
		out = append(out, Binding{Run: pr.Name, GPU: best})
	}
	return out
}

func TestAssignMatchesNaiveScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		nodes := 1 + rng.IntN(6)
		var all []GPU
		for n := range nodes {
			for i := range 1 + rng.IntN(4) {
				node := fmt.Sprintf("n%d", n)
				all = append(all, GPU{Node: node, Index: int32(i), UUID: builders.GPUUUID(node, i)})
			}
		}
		// Jobs share eligibility lists as the binder's memo makes them share,
		// some lists are sub-slices of others.
		// A shuffled list too: Assign stops early only in an ordered one.
		shuffled := slices.Clone(all)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		lists := [][]GPU{all, all[:1+rng.IntN(len(all))], all[rng.IntN(len(all)):], shuffled}
		jobs := func() map[string]*JobCapacity {
			out := map[string]*JobCapacity{}
			for j := range 5 {
				out[fmt.Sprintf("j%d", j)] = &JobCapacity{Free: rng.IntN(6), Eligible: lists[j%len(lists)], ActiveByNode: map[string]int{"n0": rng.IntN(2)}}
			}
			return out
		}
		var pending []PendingRun
		for r := range rng.IntN(25) {
			pr := PendingRun{Name: fmt.Sprintf("r%d", r), Job: fmt.Sprintf("j%d", rng.IntN(6))} // j5 has no capacity entry
			switch g := all[rng.IntN(len(all))]; rng.IntN(5) {
			case 0:
				pr.TargetGPU, pr.TargetNode = g.UUID, g.Node
			case 1:
				pr.TargetNode = g.Node
			case 2:
				pr.Avoid, pr.AvoidNodes = []string{g.UUID}, []string{g.Node}
			}
			pending = append(pending, pr)
		}
		busy := map[string]bool{}
		for _, g := range all {
			if rng.IntN(3) == 0 {
				busy[g.UUID] = true
			}
		}
		seed := rng.Uint64()
		rng1, rng2 := rand.New(rand.NewPCG(seed, 0)), rand.New(rand.NewPCG(seed, 0))
		rng = rng1
		j1 := jobs()
		rng = rng2
		j2 := jobs()
		got := Assign(pending, j1, BusySet(maps.Clone(busy)))
		want := naiveAssign(pending, j2, maps.Clone(busy))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("round %d: Assign differs from a full scan (-want +got):\n%s", round, diff)
		}
	}
}
