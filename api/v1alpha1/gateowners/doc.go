// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package gateowners reads and writes the record of who owns each gate key on
// a Node: the annotation kquant.dev/gate-owners (v1alpha1.AnnotationGateOwners),
// a JSON object from key (gate.kquant.dev/<family>) to the QuantGatePolicy that
// holds it, the marks that policy set and the GPU and run that caused it.
//
// A second record, kquant.dev/gate-conditions (Conditions), maps each Node
// condition type a policy set to that policy. A condition outlives the gate
// (True after a pass, Unknown when stale), so it has a record of its own.
//
// The record is what lets a gate remove only what it set: a label or taint of
// a gate key without an entry here belongs to a person or to another tool, and
// no policy touches it. The gate controller writes the record, in the same
// patch as the marks; the field index of Nodes by owning policy and the policy
// controller's status read it.
package gateowners
