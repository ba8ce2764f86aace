// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package simulate

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in        string
		want      string
		wantError string
	}{
		{in: "H100:8", want: "H100:8"},
		{in: "h200:2", want: "H200:2"},
		{in: "B200", want: "B200:1"},
		{in: "H100:4, A100:4", want: "H100:4,A100:4"},
		{in: "RTX-PRO-6000:2,GB200:1,B300:1,L40S:1", want: "RTX-PRO-6000:2,GB200:1,B300:1,L40S:1"},
		{in: "V100:1", wantError: "unknown product"},
		{in: "H100:0", wantError: "not a positive integer"},
		{in: "H100:x", wantError: "not a positive integer"},
		{in: "H100:2x", wantError: "not a positive integer"},
		{in: "", wantError: "no GPUs"},
		{in: "H100:65", wantError: "at most 64"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			spec, err := Parse(tc.in)
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("Parse(%q) error = %v, want one containing %q", tc.in, err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := spec.String(); got != tc.want {
				t.Errorf("Parse(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestEveryRequiredProductIsKnown(t *testing.T) {
	for _, key := range []string{"A100", "L40S", "H100", "H200", "B200", "GB200", "B300", "RTX-PRO-6000"} {
		p, ok := Lookup(key)
		if !ok {
			t.Errorf("product %s missing", key)
			continue
		}
		if p.ComputeCapability.IsZero() || p.MemoryMiB == 0 || p.Name == "" || p.CopyBandwidthGBps == 0 {
			t.Errorf("product %s incomplete: %+v", key, p)
		}
		if q, ok := LookupName(p.Name); !ok || q.Key != key {
			t.Errorf("LookupName(%q) = %v, %v", p.Name, q.Key, ok)
		}
	}
}

func TestUUIDIsStablePerNodeAndIndex(t *testing.T) {
	if first, second := UUID("n1", 0), UUID("n1", 0); first != second {
		t.Error("UUID not stable")
	}
	seen := map[string]bool{}
	for _, node := range []string{"n1", "n2"} {
		for i := range 8 {
			u := UUID(node, i)
			if seen[u] {
				t.Errorf("UUID %s repeated", u)
			}
			seen[u] = true
			if !strings.HasPrefix(u, "GPU-") || len(u) != len("GPU-")+36 {
				t.Errorf("UUID %q is not shaped like an NVIDIA UUID", u)
			}
		}
	}
}
