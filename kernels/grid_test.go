// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package kernels

import (
	"strings"
	"testing"

	"github.com/kquant/kquant/internal/cuda"
)

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

// TestReadVariants: Load's environment switches take their documented
// values and refuse others, naming the variable.
func TestReadVariants(t *testing.T) {
	for _, tc := range []struct {
		v  string
		ok bool
	}{{"", true}, {"pipe", true}, {"one", true}, {"PIPE", false}, {"persistent", false}} {
		t.Setenv(NVFP42DEnv, tc.v)
		var s Set
		err := s.readVariants()
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), NVFP42DEnv)) {
			t.Errorf("%s=%q: err %v, want ok=%v", NVFP42DEnv, tc.v, err, tc.ok)
		}
		if err == nil && s.nvfp42D != tc.v {
			t.Errorf("%s=%q: set %q", NVFP42DEnv, tc.v, s.nvfp42D)
		}
	}
}

// TestNVFP42DPipeGrid: kq_nvf4_2dp_'s grid is a block per 64 x 256
// piece, or under the cap the fewest blocks that take every piece in the
// least rounds (balanced).
func TestNVFP42DPipeGrid(t *testing.T) {
	for _, tc := range []struct {
		rows, cols, sms, cap, want int
	}{{16384, 8192, 132, 0, 8192}, {8192, 8192, 132, 0, 4096}, {64, 320, 132, 0, 2}, {1024, 1024, 132, 0, 64},
		{1024, 1024, 132, 5, 5}, {1024, 1024, 132, 30, 22}, {512, 4096, 132, 1, 1}, {192, 128, 132, 0, 3}} {
		s := Set{sms: tc.sms, tileGridCap: tc.cap}
		if g := s.nvfp42DPipeGrid(tc.rows, tc.cols); g != cuda.Dim(tc.want) {
			t.Errorf("nvfp42DPipeGrid(%d, %d), %d SMs, cap %d = %v, want %d blocks", tc.rows, tc.cols, tc.sms, tc.cap, g, tc.want)
		}
	}
}

// TestMXFP8RowbGrid: kq_mxfp8_rowb's tiles of 4 rows x 2048 columns of
// the padded scale space over at most the resident blocks (4 a SM as the
// driver reports them at 64 registers; 8 at 32), balanced, and the tests'
// cap.
func TestMXFP8RowbGrid(t *testing.T) {
	for _, tc := range []struct {
		srows, scols, cap int
		want              int
	}{{128, 4, 0, 32}, {8192, 256, 0, 512}, {16384, 512, 0, 521}, {128, 68, 0, 64}, {4 * 65536, 128, 0, 527}, {128, 4, 3, 3}} {
		s := Set{sms: 132, tileGridCap: tc.cap, perSM: map[string]int{"kq_mxfp8_rowb_bf16": 4}}
		if g := s.mxfp8RowbGrid(nil, "kq_mxfp8_rowb_bf16", tc.srows, tc.scols); g != cuda.Dim(tc.want) {
			t.Errorf("mxfp8RowbGrid(%d, %d) cap %d = %v, want %d", tc.srows, tc.scols, tc.cap, g, tc.want)
		}
	}
	// 8 a SM: 16384 tiles (16384 x 8192) in 16 rounds on 1024 of 1056 slots.
	s := Set{sms: 132, perSM: map[string]int{"kq_mxfp8_rowb_bf16": 8}}
	if g := s.mxfp8RowbGrid(nil, "kq_mxfp8_rowb_bf16", 16384, 256); g != cuda.Dim(1024) {
		t.Errorf("mxfp8RowbGrid at 8 a SM = %v, want 1024", g)
	}
}

// TestNVFP4AmaxShare: kq_nvf4_amax_'s blocks per 128-row tile fill at
// most one wave (8 blocks a SM at 32 registers): 8 a tile at 16384 rows
// and 16 at 8192 (1024 blocks of 1056 slots, where rounding up gave 1152
// and 1088, a part-empty second wave), at least four 16-byte vectors a
// thread, at least one; a kernel with no occupancy on record (0) counts 8
// a SM.
func TestNVFP4AmaxShare(t *testing.T) {
	for _, tc := range []struct {
		cols, tiles, perSM, want int
	}{
		{8192, 128, 8, 8}, {8192, 64, 8, 16}, {16384, 128, 8, 8}, {256, 1, 8, 4}, {8192, 4096, 8, 1},
		{8192, 128, 0, 8}, {8192, 64, 4, 8}, {8192, 128, 4, 4},
	} {
		s := Set{sms: 132, perSM: map[string]int{"kq_nvf4_amax_bf16": tc.perSM}}
		if g := s.nvfp4AmaxShare(nil, "kq_nvf4_amax_bf16", BF16, tc.cols, tc.tiles); g != tc.want {
			t.Errorf("nvfp4AmaxShare(%d cols, %d tiles), %d a SM = %d, want %d", tc.cols, tc.tiles, tc.perSM, g, tc.want)
		}
	}
}

// TestNVFP4ColGrid: kq_nvf4_col_'s ungrouped fast path takes one block a
// tile up to the blocks the driver says fit at once (tileGrid; 4 a SM at
// today's 64 registers, 2 as it would at 112), and the tests' cap.
func TestNVFP4ColGrid(t *testing.T) {
	for _, tc := range []struct {
		tiles      int64
		perSM, cap int
		want       int
	}{{8192, 4, 0, 528}, {100, 4, 0, 100}, {8192, 2, 0, 264}, {0, 4, 0, 1}, {8192, 4, 3, 3}} {
		s := Set{sms: 132, tileGridCap: tc.cap, perSM: map[string]int{"kq_nvf4_col_bf16": tc.perSM}}
		if g := s.tileGrid(nil, "kq_nvf4_col_bf16", int(tc.tiles), 1); g != cuda.Dim(tc.want) {
			t.Errorf("tileGrid(%d tiles), %d a SM, cap %d = %v, want %d", tc.tiles, tc.perSM, tc.cap, g, tc.want)
		}
	}
}

// TestPersistentGrids: the MXFP8 macro-tile kernels and the fast RHT amax
// take their grids from the driver's occupancy of the kernel named
// (waveSlots), balanced over the tiles, and the tests' cap: at 2 macro
// kernels a SM (128 registers) 8192^2's 4096 macro tiles run on 256
// blocks, 16384^2's 16384 on 261 (63 rounds); at 4 RHT amax blocks a SM
// its 64 column blocks of 8192 columns take 8 rows of blocks, at 2 a SM 4.
func TestPersistentGrids(t *testing.T) {
	for _, tc := range []struct {
		srows, scols, perSM, cap, want int
	}{{8192, 256, 2, 0, 256}, {8192, 512, 2, 0, 256}, {16384, 512, 2, 0, 261}, {8192, 256, 4, 0, 512}, {128, 4, 2, 0, 1}, {8192, 256, 2, 5, 5}} {
		s := Set{sms: 132, tileGridCap: tc.cap, perSM: map[string]int{"kq_mxfp8_both_bf16": tc.perSM}}
		if g := s.mxfp8Macro(nil, "kq_mxfp8_both_bf16", tc.srows, tc.scols); g != cuda.Dim(tc.want) {
			t.Errorf("mxfp8Macro(%d, %d), %d a SM, cap %d = %v, want %d", tc.srows, tc.scols, tc.perSM, tc.cap, g, tc.want)
		}
	}
	for _, tc := range []struct {
		gx, tiles, perSM, cap, want int
	}{{64, 128, 4, 0, 8}, {64, 256, 4, 0, 8}, {64, 128, 2, 0, 4}, {64, 2, 4, 0, 2}, {1024, 128, 4, 0, 1}, {64, 128, 4, 130, 2}} {
		s := Set{sms: 132, tileGridCap: tc.cap, perSM: map[string]int{"kq_nvf4_amax_rht_bf16": tc.perSM}}
		if gy := s.nvfp4AmaxRHTRows(nil, "kq_nvf4_amax_rht_bf16", tc.gx, tc.tiles); gy != tc.want {
			t.Errorf("nvfp4AmaxRHTRows(%d, %d), %d a SM, cap %d = %d, want %d", tc.gx, tc.tiles, tc.perSM, tc.cap, gy, tc.want)
		}
	}
}
