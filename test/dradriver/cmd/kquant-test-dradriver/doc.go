// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Command kquant-test-dradriver is the local cluster's DRA driver for
// simulated GPUs (package test/dradriver): it registers with the kubelet,
// publishes the node's GPUs in a ResourceSlice, applies the DeviceClass that
// selects them, and prepares claims with CDI specs. hack/cluster.sh starts it
// beside the test device plugin. Test infrastructure, never part of the
// product.
package main
