// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package gatepolicy is the controller of QuantGatePolicies: it runs each
// policy's validation as QuantJobs in the manager's own namespace, and reports
// the gates the policy holds. Package gate, not this one, changes Nodes.
//
//   - A job is created per spec generation and per period (spec.period):
//     <policy>-<generation>-<period index>, deterministic, so that a stale
//     cache never creates one twice. It is controlled by the policy (an
//     ownerReference with controller: true, which is what package gate checks
//     before it counts a run) and labelled kquant.dev/gate-policy=<policy>.
//   - A spec change replaces an active job of an older generation; a period
//     that comes while the job of the last one is still active waits for it,
//     so one policy never races itself for the same GPUs.
//   - Finished jobs beyond HistoryLimit are deleted, oldest first; a node
//     whose runs are gone keeps its gate (only a passing run clears it).
//   - status.gatedNodes is read back from the Nodes' ownership records
//     (kquant.dev/gate-owners), so it says what is on the Nodes, not what the
//     controller meant to write; the Conflict condition says when an older
//     policy gates the same key.
//
// Time comes from an injected clock; the period arithmetic and the job names
// are pure functions (schedule.go).
package gatepolicy
