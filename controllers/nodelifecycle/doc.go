// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package nodelifecycle is the controller that notices lost nodes in
// in-agent mode (gpuAllocation None), where the agent itself executes the
// runs, as the Kubernetes node lifecycle controller does from kubelets'
// Leases: when the
// Lease kquant-agent-<node> of a node's agent expires (or disappears), every
// run bound to that node and not finished is failed with reason NodeLost, so
// that its job can retry it elsewhere. Expiry is not an event, so each Lease is
// reconciled again at the moment it would expire.
//
// In run-pod mode the controller is not started: a run there follows its
// pod, and its Node through the pod (controllers/execution), and an absent
// agent only keeps new runs off its node (domain/scheduling).
package nodelifecycle
