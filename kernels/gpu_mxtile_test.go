//go:build gpu

package kernels_test

import (
	"fmt"
	"testing"
)

// TestMXFP8MacroTiles is TestMXFP8Both and TestMXFP8SwizzledScales with
// the MXFP8 macro-tile kernels' grid (kq_mxfp8_both, kq_mxfp8_colw) capped
// at a few blocks (Set.SetTileGridCap), so that every block strides over
// several macro tiles (the cp.async staging of the next tile, the
// double-buffered exponents, an uneven share, ragged and padding tiles)
// on tensors that one block per tile would cover.
func TestMXFP8MacroTiles(t *testing.T) {
	for _, blocks := range []int{1, 5} {
		old := set.SetTileGridCap(blocks)
		t.Run(fmt.Sprintf("blocks=%d", blocks), func(t *testing.T) {
			TestMXFP8Both(t)
			TestMXFP8SwizzledScales(t)
		})
		set.SetTileGridCap(old)
	}
}
