// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package capability

import (
	"github.com/kquant/kquant/api/v1alpha1"
)

// TransformerEngine's reasons, word for word (transformer_engine/pytorch
// fp8 checks), so that a profile reads the same as the error a TE user sees.
const (
	ReasonFP8ComputeCapability   = "Device compute capability 8.9 or higher required for FP8 execution."
	ReasonFP8AdaCUDA             = "Cuda version 12.1 or higher required for FP8 execution on Ada."
	ReasonBlockScaling           = "FP8 block scaled GEMM requires compute capability 9.0 or higher and CUDA >= 12.9."
	ReasonMXFP8ComputeCapability = "Device compute capability 10.0 or higher required for MXFP8 execution."
	ReasonMXFP8Arch12            = "MXFP8 (for all gemm layouts) is not supported on 12.0+ architectures yet."
	ReasonNVFP4ComputeCapability = "Device compute capability 10.0 or higher required for NVFP4 execution."
)

// kquant's own reasons, for cases TE reports as supported or does not check.
const (
	// ReasonBlockScalingViaMXFP8: TE accepts block scaling on CC >= 10.0 but
	// runs it through MXFP8 GEMMs, which only works with power-of-2 scales;
	// there is no native 1x128/128x128 GEMM there.
	ReasonBlockScalingViaMXFP8 = "FP8 block scaling runs emulated through MXFP8 on compute capability 10.0 or higher and requires power-of-2 scales."
	// ReasonQuantizeComputeCapability: kquant's quantize kernels need CC 8.0
	// (they do FP8/FP4 conversions in software where the hardware lacks them,
	// but rely on Ampere-era instructions otherwise).
	ReasonQuantizeComputeCapability = "Device compute capability 8.0 or higher required for kquant quantize kernels."
)

var (
	ccAmpere    = V(8, 0)
	ccAda       = V(8, 9)
	ccHopper    = V(9, 0)
	ccBlackwell = V(10, 0)
	cc12        = V(12, 0)
	cudaAdaFP8  = V(12, 1)
	cudaBlock   = V(12, 9)
)

// ForScheme returns how a GPU of compute capability cc, whose driver supports
// CUDA cuda, supports scheme s. An unknown (zero) cuda fails every CUDA gate,
// so that an unreadable driver version never claims native support.
func ForScheme(s v1alpha1.Scheme, cc, cuda Version) v1alpha1.RecipeSupport {
	native, reason := nativeSupport(s, cc, cuda)
	switch {
	case !cc.AtLeast(ccAmpere):
		if reason == "" {
			reason = ReasonQuantizeComputeCapability
		}
		return v1alpha1.RecipeSupport{Scheme: s, Support: v1alpha1.SupportUnsupported, Reason: reason}
	case native:
		return v1alpha1.RecipeSupport{Scheme: s, Support: v1alpha1.SupportNative}
	default:
		return v1alpha1.RecipeSupport{Scheme: s, Support: v1alpha1.SupportEmulated, Reason: reason}
	}
}

// nativeSupport is TE's check for the scheme's GEMM.
func nativeSupport(s v1alpha1.Scheme, cc, cuda Version) (bool, string) {
	switch s {
	case v1alpha1.SchemeDelayedScaling, v1alpha1.SchemeFloat8CurrentScaling:
		switch {
		case cc.AtLeast(ccHopper):
			return true, ""
		case !cc.AtLeast(ccAda):
			return false, ReasonFP8ComputeCapability
		case !cuda.AtLeast(cudaAdaFP8):
			// TE also checks cuBLASLt >= 12.1.3, which the agent cannot see
			// from the driver; the CUDA gate stands in for both.
			return false, ReasonFP8AdaCUDA
		default:
			return true, ""
		}
	case v1alpha1.SchemeFloat8BlockScaling:
		switch {
		case !cc.AtLeast(ccHopper) || !cuda.AtLeast(cudaBlock):
			return false, ReasonBlockScaling
		case cc.AtLeast(cc12):
			// The emulation path goes through MXFP8, which TE does not run there.
			return false, ReasonMXFP8Arch12
		case cc.AtLeast(ccBlackwell):
			return false, ReasonBlockScalingViaMXFP8
		default:
			return true, ""
		}
	case v1alpha1.SchemeMXFP8BlockScaling:
		switch {
		case cc.AtLeast(cc12):
			return false, ReasonMXFP8Arch12
		case cc.AtLeast(ccBlackwell):
			return true, ""
		default:
			return false, ReasonMXFP8ComputeCapability
		}
	case v1alpha1.SchemeNVFP4BlockScaling:
		if cc.AtLeast(ccBlackwell) {
			return true, ""
		}
		return false, ReasonNVFP4ComputeCapability
	default:
		return false, "unknown scheme " + string(s)
	}
}

// ForGPU returns the support of every scheme, in v1alpha1.Schemes order.
func ForGPU(cc, cuda Version) []v1alpha1.RecipeSupport {
	out := make([]v1alpha1.RecipeSupport, 0, len(v1alpha1.Schemes))
	for _, s := range v1alpha1.Schemes {
		out = append(out, ForScheme(s, cc, cuda))
	}
	return out
}

// Better returns the better of two supports: Native over Emulated over
// Unsupported (or anything else). A node's support of a scheme is the best
// of its GPUs', and every reader that combines supports uses this order.
func Better(a, b v1alpha1.Support) v1alpha1.Support {
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// rank orders supports from worst to best.
func rank(s v1alpha1.Support) int {
	switch s {
	case v1alpha1.SupportNative:
		return 2
	case v1alpha1.SupportEmulated:
		return 1
	default:
		return 0
	}
}

// Best returns, per scheme, the best support over a node's GPUs (each a
// ForGPU list). The reason is that of the first GPU with the best support,
// so a node with one native GPU reports no reason. Mixed nodes keep their
// per-GPU detail in the profile's gpus[].recipes.
func Best(perGPU [][]v1alpha1.RecipeSupport) []v1alpha1.RecipeSupport {
	best := map[v1alpha1.Scheme]v1alpha1.RecipeSupport{}
	for _, gpu := range perGPU {
		for _, rs := range gpu {
			cur, ok := best[rs.Scheme]
			if !ok || rank(rs.Support) > rank(cur.Support) {
				best[rs.Scheme] = rs
			}
		}
	}
	out := make([]v1alpha1.RecipeSupport, 0, len(best))
	for _, s := range v1alpha1.Schemes {
		if rs, ok := best[s]; ok {
			out = append(out, rs)
		}
	}
	return out
}

// knownCCs are the compute capabilities of NVIDIA GPUs from Volta on, in
// order: MinNative searches them, so that the floors it reports follow from
// the rules above instead of being written a second time.
var knownCCs = []Version{
	V(7, 0), V(7, 2), V(7, 5), V(8, 0), V(8, 6), V(8, 7), V(8, 9), V(9, 0),
	V(10, 0), V(10, 1), V(10, 3), V(11, 0), V(12, 0), V(12, 1),
}

// MinNative returns the lowest compute capability on which scheme s runs
// natively with a recent enough CUDA; false for an unknown scheme. It only
// words messages ("compute capability 9.0 < 10.0"): whether a GPU is native
// is always ForScheme's answer for that GPU.
func MinNative(s v1alpha1.Scheme) (Version, bool) {
	newest := V(99, 9)
	for _, cc := range knownCCs {
		if native, _ := nativeSupport(s, cc, newest); native {
			return cc, true
		}
	}
	return Version{}, false
}

// ReasonNotReported is the reason of a scheme that a GPU's profile does not
// list: an agent always lists every scheme it knows, so the scheme is newer
// than the agent.
const ReasonNotReported = "not reported by the node's agent"

// Reported returns how gpu supports scheme s as its agent reported it in
// the GPUNodeProfile, which is the only answer the manager and the run
// executor use. A scheme the profile does not list is Unsupported with
// ReasonNotReported, and ok is false.
func Reported(gpu *v1alpha1.GPU, s v1alpha1.Scheme) (rs v1alpha1.RecipeSupport, ok bool) {
	for i := range gpu.Recipes {
		if gpu.Recipes[i].Scheme == s {
			return gpu.Recipes[i], true
		}
	}
	return v1alpha1.RecipeSupport{Scheme: s, Support: v1alpha1.SupportUnsupported, Reason: ReasonNotReported}, false
}

// Result is the capability block of a run's results for a reported support.
func Result(rs v1alpha1.RecipeSupport) *v1alpha1.Capability {
	return &v1alpha1.Capability{
		Native:   rs.Support == v1alpha1.SupportNative,
		Emulated: rs.Support == v1alpha1.SupportEmulated,
		Reason:   rs.Reason,
	}
}
