// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package cuda

import (
	"os"
	"strings"
	"testing"
)

// TestOpenWithoutDriver runs where no CUDA driver is installed (CI, the
// development machine) and checks that the failure is an error that names
// the cause, not a panic.
func TestOpenWithoutDriver(t *testing.T) {
	if os.Getenv("KQUANT_EXPECT_GPU") != "" {
		t.Skip("KQUANT_EXPECT_GPU is set: this machine has a driver")
	}
	drv, err := Open()
	if err == nil {
		t.Skipf("a CUDA driver is present (version %s): nothing to check", drv.VersionString())
	}
	if !strings.HasPrefix(err.Error(), "no CUDA driver: ") {
		t.Errorf("Open() error = %q, want prefix %q", err, "no CUDA driver: ")
	}
	if !IsNoDriver(err) {
		t.Errorf("IsNoDriver(%v) = false, want true", err)
	}
	ok, reason := Available()
	if ok || !strings.HasPrefix(reason, "no CUDA driver: ") {
		t.Errorf("Available() = %v, %q; want false and a reason starting with %q", ok, reason, "no CUDA driver: ")
	}
	t.Logf("reason: %s", reason)
}

func TestArgsSlots(t *testing.T) {
	tests := []struct {
		name string
		args *Args
		want []uint64
	}{
		{"empty", NewArgs(), nil},
		{"mixed", NewArgs().Ptr(0x7f0000001000).U32(7).I32(-1).F32(1.5).U64(1 << 40),
			[]uint64{0x7f0000001000, 7, 0xffffffff, 0x3fc00000, 1 << 40}},
		{"buffer slice", NewArgs().Buffer(Buffer{ptr: 0x1000, size: 64}.Slice(16, 8)), []uint64{0x1010}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.args.slots[:tc.args.n]
			if len(got) != len(tc.want) {
				t.Fatalf("got %d slots, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("slot %d = %#x, want %#x", i, got[i], tc.want[i])
				}
			}
		})
	}
	a := NewArgs()
	for range maxArgs + 1 {
		a.U32(1)
	}
	if a.err == nil {
		t.Errorf("%d arguments accepted, want an error", maxArgs+1)
	}
}

func TestBufferSlicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Slice out of range did not panic")
		}
	}()
	Buffer{ptr: 1, size: 4}.Slice(2, 3)
}
