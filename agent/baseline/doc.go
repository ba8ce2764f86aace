// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package baseline is the seam through which the agent measures a node's
// reference costs — single kernel launch latency, single-node graph launch
// latency and device-to-device copy bandwidth — that the GPUNodeProfile
// publishes and against which runs judge their own numbers.
//
// The measurement needs the CUDA driver (internal/cuda), which this package
// does not import: the CUDA implementation of Prober is an adapter in
// cmd/agent over the engine's gpu.Backend.Baselines, plugged in through the
// interface. Null is the fallback for
// nodes without CUDA (and for simulated nodes): backend "reference", no
// baselines. Elsewhere is the observing agent's (runs in run pods): it
// measures nothing, since the agent holds no CUDA context, and names the
// backend the run pods use; each run pod measures the baselines of its GPU
// after its run instead (results.baselines).
package baseline
