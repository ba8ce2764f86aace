// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package e2e tests kquant as it runs in a cluster: the real manager and
// agent binaries as processes against etcd and kube-apiserver also run as
// processes (with certificates from hack/democerts, as `make demo` does), so
// that each can be killed, stopped and restarted. The tests inject faults —
// an agent killed mid-run and restarted, the leader manager killed, the API
// server and etcd restarted mid-job, an agent gone for good, a job deleted
// mid-flight — and then check what must hold after any of them: every run
// terminal, job counts that add up, and no run's result written twice.
//
// The binaries are built once per test process into a temporary directory
// (KQUANT_E2E_BIN overrides with a directory that holds manager and agent).
// Runs are slowed down by their workload, not by a test hook: a 2048x2048
// quantize benchmark on the reference backend takes seconds, long enough to
// kill a process while it runs.
package e2e
