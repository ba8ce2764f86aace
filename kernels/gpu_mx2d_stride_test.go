//go:build gpu

package kernels_test

import (
	"fmt"
	"testing"

	"github.com/kquant/kquant/kernels"
)

// TestMXFP82DStrided and TestGroupedMXFP82DStrided rerun TestMXFP82D and
// TestGroupedMXFP82D with the 2D kernels' grid capped at 1 and 3 blocks, so
// that each block walks several macro tiles and prefetches the next one
// (ragged tiles, pieces wholly past the tensor or the group, the fused and
// the per-group amaxes over many tiles per block): with the launcher's grid
// (4 blocks per SM) the test shapes below 16384x8192 give each block at
// most one or two macro tiles.
func TestMXFP82DStrided(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("grid=%d", n), func(t *testing.T) {
			defer kernels.SetMX2DGridCap(n)()
			TestMXFP82D(t)
		})
	}
}

func TestGroupedMXFP82DStrided(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("grid=%d", n), func(t *testing.T) {
			defer kernels.SetMX2DGridCap(n)()
			TestGroupedMXFP82D(t)
		})
	}
}
