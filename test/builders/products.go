// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package builders

import (
	"fmt"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/capability"
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

// Capabilities is what an agent reports for a GPU of compute capability cc
// under the profile's default driver (CUDA 13.0, MakeGPUNodeProfile): the
// rules of api/v1alpha1/capability, which the agent applies too, so a
// simulated fleet reports what a real one would. cc must be "major.minor",
// as every Product's is.
func Capabilities(cc string) []kquantv1alpha1.RecipeSupport {
	v, err := capability.Parse(cc)
	if err != nil {
		panic(fmt.Sprintf("builders: compute capability of a product: %v", err))
	}
	return capability.ForGPU(v, capability.V(13, 0))
}

// GPUUUID is the deterministic UUID of a simulated GPU.
func GPUUUID(node string, index int) string {
	return fmt.Sprintf("GPU-%s-%d", node, index)
}
