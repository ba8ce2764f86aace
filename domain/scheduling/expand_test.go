// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package scheduling

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
)

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
