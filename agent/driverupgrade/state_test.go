// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package driverupgrade

import "testing"

func TestStepAside(t *testing.T) {
	cases := map[string]bool{
		"":                       false, // no upgrade controller, or never upgraded
		"upgrade-done":           false,
		"upgrade-required":       true, // queued: take no new runs, so the node is empty by its turn
		"cordon-required":        true,
		"wait-for-jobs-required": true,
		"pod-deletion-required":  true,
		"drain-required":         true,
		"pod-restart-required":   true,
		"validation-required":    true,
		"uncordon-required":      true,
		"upgrade-failed":         true, // the driver is in no known state
		"reboot-required":        true, // a state this agent does not know yet
	}
	for state, want := range cases {
		if got := StepAside(state); got != want {
			t.Errorf("StepAside(%q) = %v, want %v", state, got, want)
		}
	}
}
