// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package nodewriter is the one way kquant writes a Node: the recipe-support
// labels (package nodelabels), the gates' labels, taints, ownership records
// and conditions (package gate), and their removal on uninstall (package
// hooks) all go through Write and WriteConditions.
//
// Every write is one JSON merge patch conditioned on the resourceVersion the
// caller read, and it carries only kquant's keys (IsKquantKey): labels and
// annotations are merged key by key, so others' keys are never sent; taints
// and conditions are lists that a merge patch replaces whole, so the patch
// carries the Node's other taints and conditions exactly as read, and the
// resourceVersion makes any write in between (the kubelet's status updates,
// kubectl taint, another controller's labels) a conflict instead of a lost
// update. A conflict means the caller's plan was made on an old Node: it
// reads the Node again and plans again (conflict.Requeue, or a retry loop).
//
// Server-side apply was the other candidate, and it loses on taints: the
// Node's taint list is atomic (+listType=atomic), so an apply would make
// kquant the owner of every taint on the Node, and an apply that later left
// the list out would delete the others' taints with it. Who set a gate key is
// recorded instead on the Node itself (api/v1alpha1/gateowners), in the same
// patch as the marks, which managedFields could not say per policy anyway.
//
// The writer refuses a change to any key outside kquant's domain before it
// reaches the API server, which refuses it too (the manager fence,
// config/policy/manager-fence.yaml).
package nodewriter
