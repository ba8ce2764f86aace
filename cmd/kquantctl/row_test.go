// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"testing"

	"github.com/kquant/kquant/test/builders"
)

// A run on a MIG slice names its parent GPU's product with the slice's
// profile and the parent's index; a whole-GPU run names the GPU.
func TestRowNamesTheGPUOrMIGSliceARanOn(t *testing.T) {
	profile := builders.MakeGPUNodeProfile("node-a").GPUs(builders.A100, 2).MIG(1, "1g.10gb", "3g.40gb").Obj()
	whole := builders.MakeQuantRun("whole", "ns", "job").Bound("node-a", 0).Obj()
	slice := builders.MakeQuantRun("slice", "ns", "job").Bound("node-a", 1).Obj()
	slice.Spec.GPUUUID, slice.Spec.MIGProfile = builders.MIGUUID("node-a", 1, 1), "3g.40gb"

	if got := newRow(whole, profile); got.Product != profile.Status.GPUs[0].Product || got.Index != "0" {
		t.Errorf("whole GPU: product %q index %q, want %q 0", got.Product, got.Index, profile.Status.GPUs[0].Product)
	}
	want := profile.Status.GPUs[1].Product + " MIG 3g.40gb"
	if got := newRow(slice, profile); got.Product != want || got.Index != "1" || got.GPU != slice.Spec.GPUUUID {
		t.Errorf("MIG slice: product %q index %q gpu %q, want %q 1 %q", got.Product, got.Index, got.GPU, want, slice.Spec.GPUUUID)
	}
}
