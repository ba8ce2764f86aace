// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package runpod runs the agent binary in run mode (`agent run
// --run=<ns>/<name>`, what a run pod starts) on a real GPU against a real
// kube-apiserver and etcd started by envtest, without a kubelet (build tag
// gpu): the run pod's path end to end on the device machine. It checks that
// a run Succeeds on the CUDA backend bit-exact against the reference with
// status.allocatedGPU recorded, that a run whose GPU another process holds
// fails with GPUInUse before its first kernel, and that SIGTERM records
// RunPodLost instead of leaving the run Running.
//
// hack/device-runpod.sh bundles it (with the agent, kube-apiserver and etcd)
// for the GPU machine, which has no Go, and runs it there.
package runpod
