package scheduling

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// ComputeCapability is a GPU's compute capability, compared as numbers (never
// as text: "10.0" < "9.0" as strings).
type ComputeCapability struct{ Major, Minor int }

// ParseComputeCapability parses "major.minor".
func ParseComputeCapability(s string) (ComputeCapability, error) {
	maj, min, ok := strings.Cut(s, ".")
	if !ok {
		return ComputeCapability{}, fmt.Errorf("compute capability %q is not major.minor", s)
	}
	a, err := strconv.Atoi(maj)
	if err != nil {
		return ComputeCapability{}, fmt.Errorf("compute capability %q: %w", s, err)
	}
	b, err := strconv.Atoi(min)
	if err != nil {
		return ComputeCapability{}, fmt.Errorf("compute capability %q: %w", s, err)
	}
	return ComputeCapability{Major: a, Minor: b}, nil
}

// Less reports whether c is lower than o.
func (c ComputeCapability) Less(o ComputeCapability) bool {
	return c.Major < o.Major || (c.Major == o.Major && c.Minor < o.Minor)
}

func (c ComputeCapability) String() string { return fmt.Sprintf("%d.%d", c.Major, c.Minor) }

// minNativeCC is the lowest compute capability with a native GEMM per scheme.
// It only words messages; whether a GPU is native is always what its agent
// reported, so the capability rules live in one place (the agent).
func minNativeCC(s kquantv1alpha1.Scheme) (ComputeCapability, bool) {
	switch s {
	case kquantv1alpha1.SchemeDelayedScaling, kquantv1alpha1.SchemeFloat8CurrentScaling:
		return ComputeCapability{8, 9}, true
	case kquantv1alpha1.SchemeFloat8BlockScaling:
		return ComputeCapability{9, 0}, true
	case kquantv1alpha1.SchemeMXFP8BlockScaling, kquantv1alpha1.SchemeNVFP4BlockScaling:
		return ComputeCapability{10, 0}, true
	}
	return ComputeCapability{}, false
}

// SchemeShortName is how messages name a scheme.
func SchemeShortName(s kquantv1alpha1.Scheme) string {
	switch s {
	case kquantv1alpha1.SchemeDelayedScaling:
		return "FP8 delayed scaling"
	case kquantv1alpha1.SchemeFloat8CurrentScaling:
		return "FP8 current scaling"
	case kquantv1alpha1.SchemeFloat8BlockScaling:
		return "FP8 block scaling"
	case kquantv1alpha1.SchemeMXFP8BlockScaling:
		return "MXFP8"
	case kquantv1alpha1.SchemeNVFP4BlockScaling:
		return "NVFP4"
	}
	return string(s)
}

// GPUSupport is how gpu supports scheme, as its agent reported it. A scheme the
// agent did not list is Unsupported.
func GPUSupport(gpu *kquantv1alpha1.GPU, scheme kquantv1alpha1.Scheme) (kquantv1alpha1.Support, string) {
	for i := range gpu.Recipes {
		if gpu.Recipes[i].Scheme == scheme {
			return gpu.Recipes[i].Support, gpu.Recipes[i].Reason
		}
	}
	return kquantv1alpha1.SupportUnsupported, "not reported by the node's agent"
}

// NodeSupport is the best support of scheme over the usable GPUs of profile:
// Native when any GPU is native, Emulated when any can emulate, else
// Unsupported. Unhealthy GPUs do not count.
func NodeSupport(profile *kquantv1alpha1.GPUNodeProfile, scheme kquantv1alpha1.Scheme) kquantv1alpha1.Support {
	best := kquantv1alpha1.SupportUnsupported
	for i := range profile.Status.GPUs {
		g := &profile.Status.GPUs[i]
		if g.Health == kquantv1alpha1.HealthUnhealthy {
			continue
		}
		switch s, _ := GPUSupport(g, scheme); s {
		case kquantv1alpha1.SupportNative:
			return s
		case kquantv1alpha1.SupportEmulated:
			best = s
		}
	}
	return best
}

// ProfileReady reports whether the agent marked its profile Ready.
func ProfileReady(profile *kquantv1alpha1.GPUNodeProfile) bool {
	return meta.IsStatusConditionTrue(profile.Status.Conditions, kquantv1alpha1.ConditionReady)
}

// notNativeDetail words why gpu is not native for scheme: the numbers when the
// GPU is below the scheme's floor, else the agent's own reason.
func notNativeDetail(gpu *kquantv1alpha1.GPU, scheme kquantv1alpha1.Scheme, agentReason string) string {
	cc, err := ParseComputeCapability(gpu.ComputeCapability)
	if err != nil {
		return strings.TrimSuffix(agentReason, ".")
	}
	if floor, ok := minNativeCC(scheme); ok && cc.Less(floor) {
		return fmt.Sprintf("compute capability %s < %s", cc, floor)
	}
	if agentReason == "" {
		return "compute capability " + cc.String()
	}
	return fmt.Sprintf("compute capability %s: %s", cc, strings.TrimSuffix(agentReason, "."))
}
