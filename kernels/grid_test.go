package kernels

import "testing"

// TestBalancedGrid: at most slots blocks, every item covered, and the
// blocks' item counts differ by at most one.
func TestBalancedGrid(t *testing.T) {
	for _, slots := range []int64{1, 7, 528, 264} {
		for _, items := range []int64{0, 1, 2, 6, 7, 8, 527, 528, 529, 1024, 1089, 4096, 16384, 16385, 1 << 20} {
			g := balancedGrid(items, slots)
			if g < 1 || g > max(slots, 1) || (items > 0 && g > items) {
				t.Fatalf("balancedGrid(%d, %d) = %d", items, slots, g)
			}
			lo, hi := items/g, (items+g-1)/g
			if hi-lo > 1 {
				t.Fatalf("balancedGrid(%d, %d) = %d: %d..%d items per block", items, slots, g, lo, hi)
			}
			if rounds := (items + slots - 1) / slots; items > 0 && hi != rounds {
				t.Fatalf("balancedGrid(%d, %d) = %d: %d rounds, want %d", items, slots, g, hi, rounds)
			}
		}
	}
	if g := balancedGrid(16384, 528); g != 512 {
		t.Errorf("balancedGrid(16384, 528) = %d, want 512", g)
	}
	if g := balancedGrid(4096, 528); g != 512 {
		t.Errorf("balancedGrid(4096, 528) = %d, want 512", g)
	}
	// The MXFP8 macro tiles at 8192^2 on 132 SMs x 2 blocks: 16 rounds on
	// 256 blocks, not a half-empty 16th round on 264.
	if g := balancedGrid(4096, 264); g != 256 {
		t.Errorf("balancedGrid(4096, 264) = %d, want 256", g)
	}
}
