// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package dradriver is a DRA (Dynamic Resource Allocation) kubelet plugin for
// simulated GPUs: test infrastructure for the local real cluster, never part
// of the product. It is the resource.k8s.io/v1 counterpart of
// test/deviceplugin.
//
// It is built on the kubelet plugin helper of k8s.io/dynamic-resource-allocation
// (kubeletplugin): it registers with the kubelet's plugin registry, serves the
// kubelet's DRA gRPC service, and publishes one ResourceSlice for the node
// whose devices are the simulated node's GPUs, named gpu-<index>. Each device
// carries the attributes <domain>/uuid (the UUID the kquant agent's simulate
// mode derives, simulate.UUID of node name and index, exactly the IDs
// test/deviceplugin advertises), <domain>/index and <domain>/productName, and
// the capacity <domain>/memory. The domain defaults to NVIDIA's
// gpu.nvidia.com, so that a claim selects a GPU the way it would with NVIDIA's
// DRA driver: device.attributes["gpu.nvidia.com"].uuid == "GPU-...". The
// driver's own name defaults to gpu.kquant.dev and DeviceClass gives the
// class that selects its devices (named gpu.nvidia.com on the local cluster,
// as NVIDIA's).
//
// Preparing a claim writes a CDI spec (Container Device Interface, which
// containerd 2 applies) with one CDI device per allocated GPU. Like the NVIDIA
// stack's env-var view of a simulated GPU, and like test/deviceplugin, the CDI
// device sets NVIDIA_VISIBLE_DEVICES and KQUANT_SIMULATED_GPUS to the UUIDs
// the claim got from this driver; there are no device nodes and no mounts,
// since the GPUs do not exist. Unpreparing removes the spec. A GPU prepared
// for one claim is refused to another (the driver is the last line of defence
// against a double allocation), and the prepared claims are read back from
// the CDI directory when the driver restarts.
package dradriver
