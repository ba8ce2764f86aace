// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package fakeagent stands in for the kquant node agent in controller tests. It
// writes what an agent writes, the way an agent writes it (server-side apply
// under the field manager "kquant-agent"): the node's GPUNodeProfile, the Lease
// kquant-agent-<node> renewed on a short cadence, and the status of runs bound
// to its node, which it moves Bound -> Running -> Succeeded with synthetic
// results (or Failed, when the test says so). Stop simulates the agent's death:
// the Lease is no longer renewed and runs stay where they are.
package fakeagent
