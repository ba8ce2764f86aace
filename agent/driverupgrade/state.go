// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package driverupgrade

// LabelUpgradeState is the Node label in which the GPU Operator's upgrade
// controller records where the node's driver upgrade stands.
const LabelUpgradeState = "nvidia.com/gpu-driver-upgrade-state"

// StateUpgradeDone is the state of a node whose driver is up to date (and
// validated, when the operator validates upgrades).
const StateUpgradeDone = "upgrade-done"

// StepAside reports whether the agent must release the driver in this
// upgrade state: in every state but upgrade-done and the label's absence.
func StepAside(state string) bool {
	return state != "" && state != StateUpgradeDone
}
