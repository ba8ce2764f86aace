// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package scale measures the controller against a real kube-apiserver and
// etcd with a fleet of simulated nodes (test/agentpool): binding throughput,
// job-creation-to-bound latency, time to finish, API requests per run, and
// the manager's peak memory and CPU read from /proc of the manager process.
// With -gpu-allocation DevicePlugin (the chart's default) runs execute in run
// pods: KWOK (kwok.yaml) is the fleet's kubelets and test/runpodsim the
// scheduler's binding and the run pods' containers; with -gpu-allocation DRA
// each run pod also has a ResourceClaim, which test/runpodsim allocates as
// the scheduler does before it binds the pod.
//
// The harness itself is scale_test.go, behind the build tag `scale`, run by
// `make scale`; this file's package also holds the measuring helpers, which
// build (and are vetted) without the tag.
package scale
