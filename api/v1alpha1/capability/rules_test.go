// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package capability

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kquant/kquant/api/v1alpha1"
)

func native(s v1alpha1.Scheme) v1alpha1.RecipeSupport {
	return v1alpha1.RecipeSupport{Scheme: s, Support: v1alpha1.SupportNative}
}

func emulated(s v1alpha1.Scheme, reason string) v1alpha1.RecipeSupport {
	return v1alpha1.RecipeSupport{Scheme: s, Support: v1alpha1.SupportEmulated, Reason: reason}
}

func unsupported(s v1alpha1.Scheme, reason string) v1alpha1.RecipeSupport {
	return v1alpha1.RecipeSupport{Scheme: s, Support: v1alpha1.SupportUnsupported, Reason: reason}
}

const (
	delayed = v1alpha1.SchemeDelayedScaling
	current = v1alpha1.SchemeFloat8CurrentScaling
	block   = v1alpha1.SchemeFloat8BlockScaling
	mxfp8   = v1alpha1.SchemeMXFP8BlockScaling
	nvfp4   = v1alpha1.SchemeNVFP4BlockScaling
)

func TestForGPU(t *testing.T) {
	cases := []struct {
		name string
		cc   Version
		cuda Version
		want []v1alpha1.RecipeSupport
	}{
		{
			name: "Volta 7.0 runs nothing",
			cc:   V(7, 0), cuda: V(12, 9),
			want: []v1alpha1.RecipeSupport{
				unsupported(delayed, ReasonFP8ComputeCapability),
				unsupported(current, ReasonFP8ComputeCapability),
				unsupported(block, ReasonBlockScaling),
				unsupported(mxfp8, ReasonMXFP8ComputeCapability),
				unsupported(nvfp4, ReasonNVFP4ComputeCapability),
			},
		},
		{
			name: "Ampere 8.0 emulates everything",
			cc:   V(8, 0), cuda: V(13, 0),
			want: []v1alpha1.RecipeSupport{
				emulated(delayed, "Device compute capability 8.9 or higher required for FP8 execution."),
				emulated(current, "Device compute capability 8.9 or higher required for FP8 execution."),
				emulated(block, "FP8 block scaled GEMM requires compute capability 9.0 or higher and CUDA >= 12.9."),
				emulated(mxfp8, "Device compute capability 10.0 or higher required for MXFP8 execution."),
				emulated(nvfp4, "Device compute capability 10.0 or higher required for NVFP4 execution."),
			},
		},
		{
			name: "Ampere 8.6 is keyed on numbers like 8.0",
			cc:   V(8, 6), cuda: V(13, 0),
			want: []v1alpha1.RecipeSupport{
				emulated(delayed, ReasonFP8ComputeCapability),
				emulated(current, ReasonFP8ComputeCapability),
				emulated(block, ReasonBlockScaling),
				emulated(mxfp8, ReasonMXFP8ComputeCapability),
				emulated(nvfp4, ReasonNVFP4ComputeCapability),
			},
		},
		{
			name: "Ada 8.9 with CUDA 12.8 runs FP8 natively, block scaling not",
			cc:   V(8, 9), cuda: V(12, 8),
			want: []v1alpha1.RecipeSupport{
				native(delayed),
				native(current),
				emulated(block, ReasonBlockScaling),
				emulated(mxfp8, ReasonMXFP8ComputeCapability),
				emulated(nvfp4, ReasonNVFP4ComputeCapability),
			},
		},
		{
			name: "Ada 8.9 with CUDA 12.0 needs a newer CUDA for FP8",
			cc:   V(8, 9), cuda: V(12, 0),
			want: []v1alpha1.RecipeSupport{
				emulated(delayed, "Cuda version 12.1 or higher required for FP8 execution on Ada."),
				emulated(current, "Cuda version 12.1 or higher required for FP8 execution on Ada."),
				emulated(block, ReasonBlockScaling),
				emulated(mxfp8, ReasonMXFP8ComputeCapability),
				emulated(nvfp4, ReasonNVFP4ComputeCapability),
			},
		},
		{
			name: "Hopper 9.0 with CUDA 12.9 runs FP8 and block scaling natively",
			cc:   V(9, 0), cuda: V(12, 9),
			want: []v1alpha1.RecipeSupport{
				native(delayed),
				native(current),
				native(block),
				emulated(mxfp8, "Device compute capability 10.0 or higher required for MXFP8 execution."),
				emulated(nvfp4, "Device compute capability 10.0 or higher required for NVFP4 execution."),
			},
		},
		{
			name: "Hopper 9.0 with CUDA 12.8 emulates block scaling",
			cc:   V(9, 0), cuda: V(12, 8),
			want: []v1alpha1.RecipeSupport{
				native(delayed),
				native(current),
				emulated(block, "FP8 block scaled GEMM requires compute capability 9.0 or higher and CUDA >= 12.9."),
				emulated(mxfp8, ReasonMXFP8ComputeCapability),
				emulated(nvfp4, ReasonNVFP4ComputeCapability),
			},
		},
		{
			name: "Hopper 9.0 with an unknown CUDA version claims no CUDA-gated support",
			cc:   V(9, 0), cuda: Version{},
			want: []v1alpha1.RecipeSupport{
				native(delayed),
				native(current),
				emulated(block, ReasonBlockScaling),
				emulated(mxfp8, ReasonMXFP8ComputeCapability),
				emulated(nvfp4, ReasonNVFP4ComputeCapability),
			},
		},
		{
			name: "Blackwell B200 10.0 runs MXFP8 and NVFP4 natively, block scaling via MXFP8",
			cc:   V(10, 0), cuda: V(13, 0),
			want: []v1alpha1.RecipeSupport{
				native(delayed),
				native(current),
				emulated(block, ReasonBlockScalingViaMXFP8),
				native(mxfp8),
				native(nvfp4),
			},
		},
		{
			name: "Blackwell B300 10.3 is keyed like 10.0",
			cc:   V(10, 3), cuda: V(13, 0),
			want: []v1alpha1.RecipeSupport{
				native(delayed),
				native(current),
				emulated(block, ReasonBlockScalingViaMXFP8),
				native(mxfp8),
				native(nvfp4),
			},
		},
		{
			name: "Blackwell 10.0 with CUDA 12.8 reports TE's block scaling reason",
			cc:   V(10, 0), cuda: V(12, 8),
			want: []v1alpha1.RecipeSupport{
				native(delayed),
				native(current),
				emulated(block, ReasonBlockScaling),
				native(mxfp8),
				native(nvfp4),
			},
		},
		{
			name: "RTX PRO 6000 12.0 has no MXFP8 GEMM",
			cc:   V(12, 0), cuda: V(13, 0),
			want: []v1alpha1.RecipeSupport{
				native(delayed),
				native(current),
				emulated(block, "MXFP8 (for all gemm layouts) is not supported on 12.0+ architectures yet."),
				emulated(mxfp8, "MXFP8 (for all gemm layouts) is not supported on 12.0+ architectures yet."),
				native(nvfp4),
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ForGPU(tc.cc, tc.cuda)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ForGPU(%s, CUDA %s) mismatch (-want +got):\n%s", tc.cc, tc.cuda, diff)
			}
		})
	}
}

func TestArchitecture(t *testing.T) {
	cases := []struct {
		cc   Version
		want v1alpha1.Architecture
	}{
		{V(7, 5), v1alpha1.ArchitectureUnknown},
		{V(8, 0), v1alpha1.ArchitectureAmpere},
		{V(8, 6), v1alpha1.ArchitectureAmpere},
		{V(8, 7), v1alpha1.ArchitectureAmpere},
		{V(8, 9), v1alpha1.ArchitectureAda},
		{V(9, 0), v1alpha1.ArchitectureHopper},
		{V(10, 0), v1alpha1.ArchitectureBlackwell},
		{V(10, 3), v1alpha1.ArchitectureBlackwell},
		{V(12, 0), v1alpha1.ArchitectureBlackwell},
		{V(13, 0), v1alpha1.ArchitectureUnknown},
	}
	for _, tc := range cases {
		if got := Architecture(tc.cc); got != tc.want {
			t.Errorf("Architecture(%s) = %s, want %s", tc.cc, got, tc.want)
		}
	}
}

func TestParseAndCUDAFromNVML(t *testing.T) {
	v, err := Parse("10.3")
	if err != nil || v != V(10, 3) {
		t.Errorf("Parse(10.3) = %v, %v", v, err)
	}
	for _, bad := range []string{"", "9", "a.b", "9.-1"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) succeeded, want an error", bad)
		}
	}
	for in, want := range map[int]Version{12090: V(12, 9), 13000: V(13, 0), 12010: V(12, 1), 0: {}} {
		if got := CUDAFromNVML(in); got != want {
			t.Errorf("CUDAFromNVML(%d) = %v, want %v", in, got, want)
		}
	}
}

func TestBestPrefersNativeOverEmulated(t *testing.T) {
	hopper := ForGPU(V(9, 0), V(13, 0))
	ampere := ForGPU(V(8, 0), V(13, 0))
	blackwell := ForGPU(V(10, 0), V(13, 0))
	got := Best([][]v1alpha1.RecipeSupport{ampere, hopper, blackwell})
	want := []v1alpha1.RecipeSupport{
		native(delayed), native(current), native(block), native(mxfp8), native(nvfp4),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Best mismatch (-want +got):\n%s", diff)
	}
	got = Best([][]v1alpha1.RecipeSupport{ampere})
	if diff := cmp.Diff(ampere, got); diff != "" {
		t.Errorf("Best of one GPU mismatch (-want +got):\n%s", diff)
	}
	if got := Best(nil); len(got) != 0 {
		t.Errorf("Best(nil) = %v, want empty", got)
	}
}

func TestMinNativeIsTheFloorOfForScheme(t *testing.T) {
	want := map[v1alpha1.Scheme]Version{
		v1alpha1.SchemeDelayedScaling:       V(8, 9),
		v1alpha1.SchemeFloat8CurrentScaling: V(8, 9),
		v1alpha1.SchemeFloat8BlockScaling:   V(9, 0),
		v1alpha1.SchemeMXFP8BlockScaling:    V(10, 0),
		v1alpha1.SchemeNVFP4BlockScaling:    V(10, 0),
	}
	for _, s := range v1alpha1.Schemes {
		got, ok := MinNative(s)
		if !ok || got != want[s] {
			t.Errorf("MinNative(%s) = %s, %v; want %s", s, got, ok, want[s])
		}
	}
	if _, ok := MinNative("Unknown"); ok {
		t.Error("MinNative(Unknown) found a floor")
	}
}

func TestReported(t *testing.T) {
	gpu := &v1alpha1.GPU{Recipes: []v1alpha1.RecipeSupport{{Scheme: v1alpha1.SchemeMXFP8BlockScaling, Support: v1alpha1.SupportEmulated, Reason: "r"}}}
	if rs, ok := Reported(gpu, v1alpha1.SchemeMXFP8BlockScaling); !ok || rs.Support != v1alpha1.SupportEmulated || rs.Reason != "r" {
		t.Errorf("listed scheme: got %+v, %v", rs, ok)
	}
	if rs, ok := Reported(gpu, v1alpha1.SchemeNVFP4BlockScaling); ok || rs.Support != v1alpha1.SupportUnsupported || rs.Reason != ReasonNotReported {
		t.Errorf("unlisted scheme: got %+v, %v", rs, ok)
	}
	if c := Result(v1alpha1.RecipeSupport{Support: v1alpha1.SupportNative}); !c.Native || c.Emulated {
		t.Errorf("Result(native) = %+v", c)
	}
}

func TestBetter(t *testing.T) {
	tests := []struct {
		name string
		a, b v1alpha1.Support
		want v1alpha1.Support
	}{
		{name: "native beats emulated", a: v1alpha1.SupportEmulated, b: v1alpha1.SupportNative, want: v1alpha1.SupportNative},
		{name: "native stays over emulated", a: v1alpha1.SupportNative, b: v1alpha1.SupportEmulated, want: v1alpha1.SupportNative},
		{name: "emulated beats unsupported", a: v1alpha1.SupportUnsupported, b: v1alpha1.SupportEmulated, want: v1alpha1.SupportEmulated},
		{name: "an unlisted scheme is no better than unsupported", a: v1alpha1.SupportUnsupported, b: "", want: v1alpha1.SupportUnsupported},
		{name: "equal supports keep the first", a: v1alpha1.SupportEmulated, b: v1alpha1.SupportEmulated, want: v1alpha1.SupportEmulated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Better(tt.a, tt.b); got != tt.want {
				t.Errorf("Better(%q, %q) = %q, want %q", tt.a, tt.b, got, tt.want)
			}
		})
	}
}
