// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package gpuguard tests agent/gpuguard on a real GPU (build tag gpu): the
// real go-nvml client against the driver, with a real CUDA context held by
// this process and by another one. It lives under test/ because it needs a
// CUDA context, which the agent's packages may not open (test/arch).
//
// Build here, run on the GPU machine:
//
//	CGO_ENABLED=1 go test -c -tags gpu -o .gpubin/gpuguard.test ./test/gpuguard
//	.gpubin/gpuguard.test -test.v
package gpuguard
