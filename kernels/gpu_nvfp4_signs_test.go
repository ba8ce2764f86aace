// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package kernels_test

import "testing"

// nvfp4SignMask, when not 0, replaces the recipe's RHT sign mask in
// nvfp4FastCheck.
var nvfp4SignMask uint16

// TestNVFP4FastSigns is TestNVFP4FastTiles with a sign mask other than
// TransformerEngine's: the 16-bit RHT kernels compile that mask in as a
// constant (KQ_TE_SIGNS) and take any other at run time, a path of its
// own.
func TestNVFP4FastSigns(t *testing.T) {
	nvfp4SignMask = 0xA5C3
	defer func() { nvfp4SignMask = 0 }()
	for _, blocks := range []int{1, 5} {
		old := set.SetTileGridCap(blocks)
		exact, total := nvfp4FastCheck(t, []shape{{64, 320}, {192, 128}, {1024, 1024}}, 8900+100*blocks)
		set.SetTileGridCap(old)
		t.Logf("NVFP4 fast paths, sign mask 0xA5C3, %d blocks: %d of %d outputs bit-exact with the reference", blocks, exact, total)
	}
}
