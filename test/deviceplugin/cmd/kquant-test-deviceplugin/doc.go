// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Command kquant-test-deviceplugin advertises simulated GPUs to a real
// kubelet as nvidia.com/gpu, for the local test cluster: it is test
// infrastructure, not part of kquant. It runs as a host process beside the
// kubelet:
//
//	kquant-test-deviceplugin --simulate H100:4 --node-name <node> \
//	    --kubeconfig .cluster/admin.kubeconfig \
//	    --device-plugin-dir /var/lib/kubelet/device-plugins/
//
// The GPUs' UUIDs are those the kquant agent derives with the same
// --simulate and --node-name, so the kubelet, PodResources and the agents
// agree on them. With --kubeconfig it also labels the Node as NVIDIA's GPU
// feature discovery would. It re-registers when the kubelet restarts, and
// on SIGTERM or SIGINT stops serving and removes its socket.
package main
