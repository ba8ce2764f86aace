// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package swizzle

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOffsetVectors(t *testing.T) {
	cases := []struct {
		name       string
		i, j, cols int
		want       int
	}{
		{"origin", 0, 0, 4, 0},
		{"next column in the same 4-group", 0, 3, 4, 3},
		{"row 1 is 16 bytes on", 1, 0, 4, 16},
		{"row 32 is the second 4-byte lane", 32, 0, 4, 4},
		{"row 127", 127, 2, 4, 31*16 + 3*4 + 2},
		{"column 4 starts the next tile", 0, 4, 8, 512},
		{"row 128 skips a row of tiles", 128, 0, 8, 2 * 512},
		{"row 130 col 5 of [256,8]", 130, 5, 8, 3*512 + 2*16 + 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Offset(tc.i, tc.j, tc.cols); got != tc.want {
				t.Errorf("Offset(%d, %d, %d) = %d, want %d", tc.i, tc.j, tc.cols, got, tc.want)
			}
		})
	}
}

func TestSwizzleIsAPermutationAndUnswizzleInvertsIt(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, shape := range [][2]int{{128, 4}, {128, 8}, {256, 4}, {384, 12}, {0, 0}} {
		rows, cols := shape[0], shape[1]
		src := make([]byte, rows*cols)
		for i := range src {
			src[i] = byte(rng.Uint32())
		}
		seen := make([]bool, rows*cols)
		for i := range rows {
			for j := range cols {
				o := Offset(i, j, cols)
				if seen[o] {
					t.Fatalf("[%d,%d]: offset %d hit twice", rows, cols, o)
				}
				seen[o] = true
			}
		}
		sw, err := Swizzle(src, rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Unswizzle(sw, rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(src, back); diff != "" {
			t.Errorf("[%d,%d] round trip (-want +got):\n%s", rows, cols, diff)
		}
	}
}

func TestSwizzleRejectsUnpaddedShapes(t *testing.T) {
	for _, shape := range [][3]int{{127, 4, 127 * 4}, {128, 3, 384}, {128, 4, 10}, {-128, 4, 0}} {
		if _, err := Swizzle(make([]byte, max(shape[2], 0)), shape[0], shape[1]); err == nil {
			t.Errorf("Swizzle accepted shape %v", shape)
		}
		if _, err := Unswizzle(make([]byte, max(shape[2], 0)), shape[0], shape[1]); err == nil {
			t.Errorf("Unswizzle accepted shape %v", shape)
		}
	}
}

func TestTranspose(t *testing.T) {
	got := Transpose([]byte{1, 2, 3, 4, 5, 6}, 2, 3)
	if diff := cmp.Diff([]byte{1, 4, 2, 5, 3, 6}, got); diff != "" {
		t.Errorf("Transpose (-want +got):\n%s", diff)
	}
}

func FuzzSwizzleRoundTrip(f *testing.F) {
	f.Add([]byte{1, 2, 3}, uint8(1), uint8(1))
	f.Fuzz(func(t *testing.T, seed []byte, rt, ct uint8) {
		rows, cols := 128*int(rt%3), 4*int(ct%5)
		src := make([]byte, rows*cols)
		for i := range src {
			if len(seed) > 0 {
				src[i] = seed[i%len(seed)] + byte(i)
			}
		}
		sw, err := Swizzle(src, rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Unswizzle(sw, rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(src, back); diff != "" {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
	})
}
