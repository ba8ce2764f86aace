// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gateowners

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

func TestRoundTrip(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC))
	tests := []struct {
		name   string
		owners Owners
	}{
		{name: "empty removes the annotation"},
		{name: "two keys of two policies", owners: Owners{
			"gate.kquant.dev/fp8":   {Policy: "fp8", Label: true, Taint: corev1.TaintEffectNoSchedule, GPU: "GPU-0", Run: "fp8-1-0-0-0", Since: since},
			"gate.kquant.dev/nvfp4": {Policy: "nvfp4", Label: true, Since: since},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := tt.owners.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if (v == nil) != (len(tt.owners) == 0) {
				t.Fatalf("Encode = %v for %d owners", v, len(tt.owners))
			}
			annotations := map[string]string{}
			if v != nil {
				annotations[kquantv1alpha1.AnnotationGateOwners] = *v
			}
			got, err := Of(annotations)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.owners
			if want == nil {
				want = Owners{}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPolicies(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        []string
	}{
		{name: "no record", want: nil},
		{name: "malformed record names none", annotations: map[string]string{kquantv1alpha1.AnnotationGateOwners: "{"}, want: nil},
		{name: "sorted and unique", annotations: map[string]string{kquantv1alpha1.AnnotationGateOwners: `{"gate.kquant.dev/nvfp4":{"policy":"b","since":null},"gate.kquant.dev/fp8":{"policy":"a","since":null},"gate.kquant.dev/mxfp8":{"policy":"b","since":null}}`},
			want: []string{"a", "b"}},
		{name: "condition owners count", annotations: map[string]string{
			kquantv1alpha1.AnnotationGateOwners:     `{"gate.kquant.dev/fp8":{"policy":"b","since":null}}`,
			kquantv1alpha1.AnnotationGateConditions: `{"kquant.dev/FP8Validated":"b","kquant.dev/NVFP4Validated":"c"}`},
			want: []string{"b", "c"}},
		{name: "a malformed condition record keeps the key owners", annotations: map[string]string{
			kquantv1alpha1.AnnotationGateOwners:     `{"gate.kquant.dev/fp8":{"policy":"a","since":null}}`,
			kquantv1alpha1.AnnotationGateConditions: `[`},
			want: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Policies(tt.annotations)); diff != "" {
				t.Errorf("Policies (-want +got):\n%s", diff)
			}
		})
	}
}
