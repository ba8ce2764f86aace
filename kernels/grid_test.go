package kernels

import "testing"

// TestBalancedBlocks: the grids of the MXFP8 grid-stride kernels give every
// block the same number of rounds or one less, never more blocks than fit,
// and the same number of rounds as the largest grid.
func TestBalancedBlocks(t *testing.T) {
	for _, c := range []struct{ items, per, most, want int64 }{
		{4096, 1, 264, 256},   // 8192^2 macro tiles on 132 SMs x 2
		{16384, 1, 264, 261},  // 16384^2
		{32768, 8, 528, 512},  // 8192^2 rowwise units, 8 warps a block
		{131072, 8, 528, 512}, // 16384^2
		{1, 8, 528, 1},
		{0, 1, 264, 1},
		{100, 1, 264, 100},
		{265, 1, 264, 133},
	} {
		got := balancedBlocks(c.items, c.per, c.most)
		if got != c.want {
			t.Errorf("balancedBlocks(%d, %d, %d) = %d, want %d", c.items, c.per, c.most, got, c.want)
		}
		blocks := max((c.items+c.per-1)/c.per, 1)
		if got > c.most || (blocks+got-1)/got != (blocks+c.most-1)/c.most {
			t.Errorf("balancedBlocks(%d, %d, %d) = %d: more blocks than fit or more rounds", c.items, c.per, c.most, got)
		}
	}
}
