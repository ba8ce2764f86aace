// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package nodelabels is the controller that derives four Node labels from each
// node's GPUNodeProfile, so that training workloads can select nodes by recipe:
// kquant.dev/fp8, kquant.dev/fp8-block, kquant.dev/mxfp8 and kquant.dev/nvfp4,
// each "native" or "emulated", and absent when neither is true. It owns those
// four keys and touches no other label.
package nodelabels
