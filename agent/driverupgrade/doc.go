// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package driverupgrade makes the agent step aside while the GPU Operator
// upgrades its node's driver.
//
// The GPU Operator's upgrade controller walks each node through the states
// of the Node label nvidia.com/gpu-driver-upgrade-state (upgrade-required,
// cordon-required, wait-for-jobs-required, pod-deletion-required,
// drain-required, pod-restart-required, validation-required,
// uncordon-required, then upgrade-done, or upgrade-failed). Its driver
// manager evicts GPU pods but skips DaemonSets, and unloading the kernel
// modules fails while any process holds the driver open, so the agent must
// let go by itself. StepAside says which states ask for that: every value
// but upgrade-done, from upgrade-required on (a node waiting for its turn
// takes no new runs, so that it is empty by the time it is drained), through
// upgrade-failed (the driver is in no known state until the controller moves
// the node on) and any state a later operator adds.
//
// The Watcher reconciles the agent's own Node, read from a cache restricted
// to it by a metadata.name field selector, and asks the Profile to step
// aside (publish the profile as upgrading, then release NVML) or to resume
// (reopen NVML, rediscover, publish). The agent's Lease is renewed all the
// while: the agent is alive, only its driver is away.
package driverupgrade
