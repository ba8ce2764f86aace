// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package fakekubelet serves the kubelet's real PodResources v1 gRPC API
// (k8s.io/kubelet/pkg/apis/podresources/v1) with answers a test sets, on a
// unix socket: what agent/podresources reads and the agent publishes, without
// a kubelet. It exists for tests only; the product never serves this API.
package fakekubelet
