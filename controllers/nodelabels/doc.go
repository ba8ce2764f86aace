// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package nodelabels is the controller that keeps each node's recipe-support
// labels (package supportlabels: kquant.dev/fp8, kquant.dev/fp8-block,
// kquant.dev/mxfp8 and kquant.dev/nvfp4, each "native" or "emulated", and
// absent when neither is true) as its GPUNodeProfile implies, so that training
// workloads can select nodes by recipe. It owns those four keys and touches no
// other label.
package nodelabels
