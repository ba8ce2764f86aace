// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package runner is the contract between the run path and what measures a
// run: a Runner executes one QuantRun on one GPU and returns its results,
// and an Opener creates the run's CUDA context before its first kernel.
// Both modes of execution call it, run pods (agent/runmode, the default)
// and the opt-in in-agent executor (agent/executor); the measurement
// harness (internal/bench) implements it for real GPUs and simulate.Runner
// for simulated ones. It is a package of its own so that neither mode
// imports the other.
package runner
