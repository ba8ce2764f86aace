// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package cuda

import "testing"

func TestPeakMemoryBandwidth(t *testing.T) {
	cases := []struct {
		name  string
		info  DeviceInfo
		wantG float64
	}{
		// The attributes an H100 SXM reports: HBM3 at 2619 MHz on a
		// 5120-bit bus, the datasheet's 3.35 TB/s.
		{"H100 SXM", DeviceInfo{MemClockKHz: 2619000, MemBusWidthBits: 5120}, 3352.32},
		{"nothing reported", DeviceInfo{}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.info.PeakMemoryBandwidthGBps(); got != tc.wantG {
				t.Errorf("PeakMemoryBandwidthGBps() = %v, want %v", got, tc.wantG)
			}
		})
	}
}
