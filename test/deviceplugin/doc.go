// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package deviceplugin is a kubelet device plugin for simulated GPUs: test
// infrastructure for the local real cluster, never part of the product.
//
// It speaks the kubelet's real device-plugin gRPC API (v1beta1): it serves
// on a unix socket in the kubelet's device-plugin directory, registers with
// the kubelet's Registration service, and advertises a simulated node's GPUs
// under a resource name (nvidia.com/gpu by default), so that pods requesting
// that resource are scheduled, counted and allocated by the real kubelet,
// and the PodResources API reports which GPU each pod holds.
//
// The device IDs are the simulated GPUs' UUIDs exactly as the kquant agent's
// simulate mode derives them (simulate.UUID of node name and index), so the
// IDs the kubelet hands out, the IDs PodResources reports, and the GPUs the
// agents discover and publish all agree.
//
// Allocation follows NVIDIA's device plugin with its env-var strategy: each
// container gets NVIDIA_VISIBLE_DEVICES with the allocated UUIDs, plus
// KQUANT_SIMULATED_GPUS with the same list, which a simulated run pod reads
// to know which GPUs it was given (there is no driver to restrict it). No
// device nodes and no mounts: the GPUs do not exist.
//
// The kubelet wipes the device-plugin directory when it restarts, which
// removes the plugin's socket and replaces kubelet.sock. Plugin.Run watches
// for both and serves and registers again, as NVIDIA's plugin does.
//
// NodeLabels gives the labels NVIDIA's GPU feature discovery would put on a
// node with these GPUs, and ApplyNodeLabels writes them to the Node.
package deviceplugin
