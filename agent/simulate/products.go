// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package simulate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kquant/kquant/api/v1alpha1/capability"
)

// Product is a GPU model that can be simulated.
type Product struct {
	// Key is the name used in --simulate, for example "H100".
	Key string
	// Name is NVML's product name.
	Name string
	// ComputeCapability is the model's true compute capability.
	ComputeCapability capability.Version
	// MemoryMiB is the total memory NVML reports (nvidia-smi's figure).
	MemoryMiB int64
	// MIG is true for models with Multi-Instance GPU.
	MIG bool
	// MIGEnabled is true for a GPU simulated in MIG mode ("<product>/mig" in
	// a spec), partitioned as MIGSlices says.
	MIGEnabled bool
	// CopyBandwidthGBps is a plausible device-to-device copy bandwidth, for
	// synthetic results; about 85% of the memory's peak.
	CopyBandwidthGBps float64
}

// products is read-only after package initialisation; Lookup hands out copies.
var products = map[string]Product{
	"A100":         {Key: "A100", Name: "NVIDIA A100-SXM4-80GB", ComputeCapability: capability.V(8, 0), MemoryMiB: 81920, MIG: true, CopyBandwidthGBps: 1730},
	"L40S":         {Key: "L40S", Name: "NVIDIA L40S", ComputeCapability: capability.V(8, 9), MemoryMiB: 46068, MIG: false, CopyBandwidthGBps: 735},
	"H100":         {Key: "H100", Name: "NVIDIA H100 80GB HBM3", ComputeCapability: capability.V(9, 0), MemoryMiB: 81559, MIG: true, CopyBandwidthGBps: 2850},
	"H200":         {Key: "H200", Name: "NVIDIA H200", ComputeCapability: capability.V(9, 0), MemoryMiB: 143771, MIG: true, CopyBandwidthGBps: 4080},
	"B200":         {Key: "B200", Name: "NVIDIA B200", ComputeCapability: capability.V(10, 0), MemoryMiB: 183359, MIG: true, CopyBandwidthGBps: 6800},
	"GB200":        {Key: "GB200", Name: "NVIDIA GB200", ComputeCapability: capability.V(10, 0), MemoryMiB: 189471, MIG: true, CopyBandwidthGBps: 6800},
	"B300":         {Key: "B300", Name: "NVIDIA B300 SXM6 AC", ComputeCapability: capability.V(10, 3), MemoryMiB: 275040, MIG: true, CopyBandwidthGBps: 6800},
	"RTX-PRO-6000": {Key: "RTX-PRO-6000", Name: "NVIDIA RTX PRO 6000 Blackwell Server Edition", ComputeCapability: capability.V(12, 0), MemoryMiB: 97887, MIG: true, CopyBandwidthGBps: 1520},
}

// Lookup finds a product by key (case-insensitive).
func Lookup(key string) (Product, bool) {
	for k, p := range products {
		if strings.EqualFold(k, key) {
			return p, true
		}
	}
	return Product{}, false
}

// LookupName finds a product by NVML product name, for synthetic results.
func LookupName(name string) (Product, bool) {
	for _, p := range products {
		if p.Name == name {
			return p, true
		}
	}
	return Product{}, false
}

// Keys lists the product keys in sorted order.
func Keys() []string {
	keys := make([]string, 0, len(products))
	for k := range products {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Group is Count GPUs of one product.
type Group struct {
	Product Product
	Count   int
}

// Spec is a simulated node's GPUs, in index order.
type Spec []Group

// MaxGPUs bounds a simulated node, as the API bounds a profile's gpus.
const MaxGPUs = 64

// Parse reads "<product>:<count>[,<product>:<count>...]", for example
// "H100:8" or "H100:4,A100:4". A missing count means 1. "<product>/mig"
// simulates the product in MIG mode, partitioned as MIGSlices says.
func Parse(s string) (Spec, error) {
	var spec Spec
	total := 0
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, countText, hasCount := strings.Cut(part, ":")
		key, mig := strings.CutSuffix(key, MIGSuffix)
		p, ok := Lookup(key)
		if !ok {
			return nil, fmt.Errorf("simulate %q: unknown product %q (known: %s)", s, key, strings.Join(Keys(), ", "))
		}
		if mig && !p.MIG {
			return nil, fmt.Errorf("simulate %q: %s has no MIG", s, p.Key)
		}
		p.MIGEnabled = mig
		count := 1
		if hasCount {
			if _, err := fmt.Sscanf(countText, "%d", &count); err != nil || count < 1 || fmt.Sprint(count) != countText {
				return nil, fmt.Errorf("simulate %q: count %q is not a positive integer", s, countText)
			}
		}
		total += count
		spec = append(spec, Group{Product: p, Count: count})
	}
	if len(spec) == 0 {
		return nil, fmt.Errorf("simulate %q: no GPUs given (want <product>:<count>)", s)
	}
	if total > MaxGPUs {
		return nil, fmt.Errorf("simulate %q: %d GPUs, at most %d per node", s, total, MaxGPUs)
	}
	return spec, nil
}

// String formats the spec as Parse reads it.
func (s Spec) String() string {
	parts := make([]string, 0, len(s))
	for _, g := range s {
		key := g.Product.Key
		if g.Product.MIGEnabled {
			key += MIGSuffix
		}
		parts = append(parts, fmt.Sprintf("%s:%d", key, g.Count))
	}
	return strings.Join(parts, ",")
}

// Products returns one Product per GPU, in index order.
func (s Spec) Products() []Product {
	var out []Product
	for _, g := range s {
		for range g.Count {
			out = append(out, g.Product)
		}
	}
	return out
}
