// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import "testing"

// TestIsRunDisruption holds the split of run failures: what the node, the
// scheduler, an eviction or another process did to the run is a disruption;
// what the run did itself counts against backoffLimit.
func TestIsRunDisruption(t *testing.T) {
	tests := []struct {
		reason string
		want   bool
	}{
		{RunReasonNodeLost, true},
		{ReasonNodeLost, true},
		{RunReasonRunPodLost, true},
		{RunReasonGPUInUse, true},
		{RunReasonRunPodFailed, false},
		{RunReasonRunTimedOut, false},
		{RunReasonRunPodExitedWithoutResult, false},
		{ReasonDeadlineExceeded, false},
		{ReasonBackoffLimitExceeded, false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			if got := IsRunDisruption(tt.reason); got != tt.want {
				t.Errorf("IsRunDisruption(%q) = %v, want %v", tt.reason, got, tt.want)
			}
		})
	}
}
