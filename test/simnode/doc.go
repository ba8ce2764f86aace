// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package simnode is the command line that the local cluster's
// simulated-GPU node programs share, the test device plugin
// (kquant-test-deviceplugin) and the test DRA driver (kquant-test-dradriver):
// the simulated node's flags, the logger, the API client, the signal context
// and the exit. Test infrastructure, never part of the product.
package simnode
