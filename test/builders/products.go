// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package builders

import (
	"fmt"
	"strconv"
	"strings"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// Product is a GPU model with the facts an agent reports about it.
type Product struct {
	Name              string
	ComputeCapability string
	Architecture      kquantv1alpha1.Architecture
	MemoryMiB         int64
}

// GPU models with their true compute capabilities, for simulated fleets.
var (
	A100       = Product{"NVIDIA A100-SXM4-80GB", "8.0", kquantv1alpha1.ArchitectureAmpere, 81920}
	L40S       = Product{"NVIDIA L40S", "8.9", kquantv1alpha1.ArchitectureAda, 46068}
	H100       = Product{"NVIDIA H100 80GB HBM3", "9.0", kquantv1alpha1.ArchitectureHopper, 81559}
	H200       = Product{"NVIDIA H200", "9.0", kquantv1alpha1.ArchitectureHopper, 143771}
	B200       = Product{"NVIDIA B200", "10.0", kquantv1alpha1.ArchitectureBlackwell, 183359}
	GB200      = Product{"NVIDIA GB200", "10.0", kquantv1alpha1.ArchitectureBlackwell, 189471}
	B300       = Product{"NVIDIA B300 SXM6 AC", "10.3", kquantv1alpha1.ArchitectureBlackwell, 275040}
	RTXPro6000 = Product{"NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0", kquantv1alpha1.ArchitectureBlackwell, 97887}
)

// Capabilities is what an agent reports for a GPU of compute capability cc,
// following quantization-formats.md ("Capability rules") with a recent CUDA
// (>= 12.9): Native where TransformerEngine runs the GEMM, Emulated where the
// quantize kernels run (CC >= 8.0), Unsupported below that.
func Capabilities(cc string) []kquantv1alpha1.RecipeSupport {
	major, minor := parseCC(cc)
	at := func(a, b int) bool { return major > a || (major == a && minor >= b) }
	fallback := kquantv1alpha1.SupportEmulated
	if !at(8, 0) {
		fallback = kquantv1alpha1.SupportUnsupported
	}
	support := func(native bool, reason string) (kquantv1alpha1.Support, string) {
		if native {
			return kquantv1alpha1.SupportNative, ""
		}
		return fallback, reason
	}
	out := make([]kquantv1alpha1.RecipeSupport, 0, len(kquantv1alpha1.Schemes))
	for _, s := range kquantv1alpha1.Schemes {
		var sup kquantv1alpha1.Support
		var reason string
		switch s {
		case kquantv1alpha1.SchemeDelayedScaling, kquantv1alpha1.SchemeFloat8CurrentScaling:
			sup, reason = support(at(8, 9), "Device compute capability 8.9 or higher required for FP8 execution.")
		case kquantv1alpha1.SchemeFloat8BlockScaling:
			// On CC >= 10.0 block scaling runs through MXFP8: emulated.
			sup, reason = support(at(9, 0) && !at(10, 0), "FP8 block scaled GEMM requires compute capability 9.0 or higher and CUDA >= 12.9.")
			if at(10, 0) {
				reason = "FP8 block scaling runs emulated through MXFP8 on compute capability 10.0 and newer."
			}
		case kquantv1alpha1.SchemeMXFP8BlockScaling:
			sup, reason = support(at(10, 0) && !at(12, 0), "Device compute capability 10.0 or higher required for MXFP8 execution.")
			if at(12, 0) {
				reason = "MXFP8 (for all gemm layouts) is not supported on 12.0+ architectures yet."
			}
		case kquantv1alpha1.SchemeNVFP4BlockScaling:
			sup, reason = support(at(10, 0), "Device compute capability 10.0 or higher required for NVFP4 execution.")
		}
		out = append(out, kquantv1alpha1.RecipeSupport{Scheme: s, Support: sup, Reason: reason})
	}
	return out
}

func parseCC(cc string) (int, int) {
	a, b, _ := strings.Cut(cc, ".")
	major, _ := strconv.Atoi(a)
	minor, _ := strconv.Atoi(b)
	return major, minor
}

// GPUUUID is the deterministic UUID of a simulated GPU.
func GPUUUID(node string, index int) string {
	return fmt.Sprintf("GPU-%s-%d", node, index)
}
