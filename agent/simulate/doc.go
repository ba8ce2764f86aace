// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package simulate makes GPUs that do not exist: a node's worth of go-nvml
// mock devices with the true compute capability, memory and product name of
// real NVIDIA GPUs, so that tests, demos without a GPU and scale tests can
// run agents (many per machine, each with its own --node-name) that discover
// them through the same NVML code path as real hardware.
//
// A simulated node is described by a Spec such as "H100:8" or
// "H100:4,A100:4" (mixed models on one node). UUIDs are derived from the
// node name and GPU index, so a restarted agent finds the same GPUs, and two
// simulated nodes never share one.
//
// Runner is the runner.Runner of simulated GPUs: it measures nothing and
// makes up plausible, deterministic results (from the product's copy
// bandwidth, the scheme and the shapes), for tests and for scale tests with
// thousands of GPUs. It lives here, beside the products it models, so that
// the executor knows nothing of simulation.
package simulate
