// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package supportlabels

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
)

func TestDesired(t *testing.T) {
	cases := map[string]struct {
		profile *kquantv1alpha1.GPUNodeProfile
		want    map[string]string
	}{
		"no profile, no labels": {want: map[string]string{}},
		"Hopper": {
			profile: builders.MakeGPUNodeProfile("h").GPUs(builders.H100, 8).Ready().Obj(),
			want:    map[string]string{LabelFP8: ValueNative, LabelFP8Block: ValueNative, LabelMXFP8: ValueEmulated, LabelNVFP4: ValueEmulated},
		},
		"Blackwell B200": {
			profile: builders.MakeGPUNodeProfile("b").GPUs(builders.B200, 8).Ready().Obj(),
			want:    map[string]string{LabelFP8: ValueNative, LabelFP8Block: ValueEmulated, LabelMXFP8: ValueNative, LabelNVFP4: ValueNative},
		},
		"mixed node takes the best GPU": {
			profile: builders.MakeGPUNodeProfile("m").GPUs(builders.A100, 1).GPUs(builders.L40S, 1).Ready().Obj(),
			want:    map[string]string{LabelFP8: ValueNative, LabelFP8Block: ValueEmulated, LabelMXFP8: ValueEmulated, LabelNVFP4: ValueEmulated},
		},
		"unhealthy GPUs count for nothing": {
			profile: builders.MakeGPUNodeProfile("u").GPUs(builders.H100, 1).Unhealthy(0).Ready().Obj(),
			want:    map[string]string{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Desired(tc.profile)); diff != "" {
				t.Errorf("Desired() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChanges(t *testing.T) {
	current := map[string]string{"kubernetes.io/hostname": "a", LabelFP8: ValueEmulated, LabelNVFP4: ValueNative}
	desired := map[string]string{LabelFP8: ValueNative, LabelMXFP8: ValueNative}
	want := map[string]any{LabelFP8: ValueNative, LabelMXFP8: ValueNative, LabelNVFP4: nil}
	if diff := cmp.Diff(want, Changes(current, desired)); diff != "" {
		t.Errorf("Changes() mismatch (-want +got):\n%s", diff)
	}
	if got := Changes(desired, desired); len(got) != 0 {
		t.Errorf("Changes(same) = %v, want none", got)
	}
}
