// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package gate is what a gate is, as pure functions of their inputs,
// table-tested without an API server: the verdicts per policy and family
// from a node's finished validation runs (Decide), the node's labels, taints
// and ownership record that follow (PlanNode), its kquant.dev/<Family>Validated
// conditions (PlanConditions, ConditionType), the Events each change is
// recorded as (Change and the Reason constants), the gate keys (Key,
// gate.kquant.dev/<family>) and the tolerations of every gate taint that
// kquant's own pods carry (Tolerations).
//
// The reconciler in controllers/gate reads the node, its runs and the
// policies, calls these and writes what they return; the run pod (package
// runpod) and the tests import the same tolerations, keys and reasons from
// here, so nothing outside the manager needs the reconciler.
package gate
