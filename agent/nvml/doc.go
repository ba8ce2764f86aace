// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package nvml discovers a node's NVIDIA GPUs and their health through NVML
// (github.com/NVIDIA/go-nvml).
//
// The hardware sits behind a seam, as in NVIDIA's k8s-device-plugin: the
// Discoverer interface has an NVML implementation that works on any
// go-nvml Interface — the real library from nvml.New() on GPU nodes, or a
// go-nvml mock in unit tests and simulated nodes (package simulate) — and a
// Null implementation for machines without the library, which reports no
// GPUs and says why. Auto picks between them.
//
// Health follows the device plugin's habits: retired pages pending and
// pending row remapping make a GPU Degraded, failed row remapping and XID
// critical errors (except those caused by applications) make it Unhealthy,
// a temperature at or above the slowdown threshold makes it Degraded. XIDs
// are sticky for the life of the Discoverer, since NVML reports each once.
//
// A GPU Operator driver upgrade unloads the kernel modules, which fails
// while any process holds the driver open. NVML is therefore a Releaser:
// Release frees the event set and shuts NVML down (the agent never opens
// CUDA, so that closes its last /dev/nvidia* descriptor), Discover answers
// ErrReleased meanwhile, and Reopen initialises the new driver and forgets
// the old driver's XIDs.
package nvml
