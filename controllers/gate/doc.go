// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package gate is the controller that keeps nodes whose GPUs fail a
// QuantGatePolicy's validation away from training: a node where the latest run
// of a policy on some GPU has verdict Fail gets what the policy's actions say,
// the label gate.kquant.dev/<family>=failed and/or a taint of that key and
// value; when later runs of the same policy pass (Pass or Warn) on every GPU
// that failed, exactly those marks are removed.
//
// Only runs in the manager's own namespace whose QuantJob is controlled by an
// existing QuantGatePolicy (same UID) count: a tenant's job, whatever owner
// references it carries, never gates or clears a node.
//
// Each gate owns its keys. The Node records which policy holds each key and
// which marks it set (package gateowners, annotation kquant.dev/gate-owners);
// a policy removes only what the record says it set, never takes over a key
// set by someone else, and a second policy on a held key is blocked (an Event
// on the policy) instead of fighting. Every change is an Event on the Node
// naming the policy, the family, the GPU and the run.
//
// The gate owns the gate.kquant.dev/ keys and nothing else; the recipe-support
// labels kquant.dev/<family>=native|emulated belong to the nodelabels
// controller (package supportlabels), so the two never write the same key. A
// node whose runs are gone keeps its gate until a later validation passes, or
// its policy is deleted.
//
// A policy's actions.condition (the default) also sets the Node condition
// kquant.dev/<Family>Validated (ConditionType): False while the gate holds,
// True after a pass, Unknown (ValidationStale) once the last pass is older
// than the policy's period, so that remediation controllers (Medik8s
// NodeHealthCheck) can act. It is written to the node's status through
// controllers/internal/nodewriter, which changes only kquant's condition
// types, and recorded per
// policy in the annotation kquant.dev/gate-conditions: a condition of that
// type without a record is someone else's and is left alone.
// The decisions are pure functions of domain/gate: Decide (the verdicts per
// policy), PlanNode (the node's marks, record and Events) and PlanConditions
// (its conditions). The Reconciler (one request per node) reads the
// node's finished runs through the run-by-node index and writes labels,
// taints and record in one Node write (nodewriter: a merge patch conditioned
// on the Node's resourceVersion). It also watches the Nodes' gate labels and records
// (metadata only), so that a gate removed by hand while its failure stands
// comes back and a freed key can be claimed, and the policies, so that their
// changed actions or their deletion reach the nodes they hold.
package gate
