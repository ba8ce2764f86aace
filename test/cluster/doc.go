// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build cluster

// Package cluster tests kquant the way users run it: on the real single-node
// cluster of hack/cluster.sh (kubelet, containerd, runc, bridge CNI,
// kube-proxy, kube-scheduler, kube-controller-manager), with the images built
// offline by `make images` and the chart installed by helm, as
// `make cluster-e2e` does. Nothing is faked but the GPUs: the test device plugin
// advertises simulated ones to the kubelet, the test DRA driver publishes the
// same ones in a ResourceSlice, and the agents simulate the same. Kueue, built
// from its Go module, runs beside them.
//
// The tests drive the cluster as a user would, with kubectl, helm and crictl,
// and read objects with a client where that checks more precisely. They run in
// one ordered sequence, since each step leaves the cluster as the next expects:
// pods as the chart says, the agent's node-bound writes, jobs to Succeeded,
// MIG slices (a simulated MIG-partitioned A100 whose slices only a job that
// opts in uses), faults (an agent pod and the manager pod deleted mid-run),
// the faults of run-pod mode (faults_test.go: the API server stopped while
// runs finish, the manager killed, the kubelet and containerd restarted mid-run,
// an OOM kill, an eviction, the agent rolled to an unready image, a node
// lost past its grace period, a job deleted mid-flight, a GPU Operator
// driver upgrade; each stops or starts a component with hack/cluster.sh
// stop|start and checks results, reasons, counts and leftovers),
// a QuantGatePolicy that gates the node and, re-validated, un-gates it while
// the agent pod (which tolerates the gate) and the device plugin (a process
// on the node here, as NVIDIA's runs as a pod that the GPU Operator's values
// make tolerate the gate, docs/gates-and-schedules.md) keep serving,
// helm upgrade, a wrong image tag, a DRA claim pinned to a GPU by UUID,
// Kueue's gate and quota on plain pods, a Prometheus server (Debian's package) scraping the
// manager and the agent and evaluating the chart's alerts, and helm uninstall
// last, whose hook takes kquant's marks off the node.
//
// Build tag cluster keeps them out of `go test ./...`: they need root and the
// running cluster (KQUANT_CLUSTER_DIR, default <repo>/.cluster).
package cluster
