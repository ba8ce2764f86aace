// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantjob

import (
	"testing"
	"time"
)

func TestFormatEstimate(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{200 * time.Millisecond, "1s"},
		{1400 * time.Millisecond, "1s"},
		{42*time.Second + 600*time.Millisecond, "43s"},
		{61 * time.Second, "1m"},
		{590*time.Second + 500*time.Millisecond, "9m50s"},
		{2*time.Hour + 9*time.Minute + 40*time.Second, "2h10m"},
		{3 * time.Hour, "3h"},
	}
	for _, tt := range tests {
		if got := formatEstimate(tt.in); got != tt.want {
			t.Errorf("formatEstimate(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
