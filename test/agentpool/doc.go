// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package agentpool runs many simulated node agents in one process for scale
// tests, through the agent's own code: each node has its own simulated NVML
// library, profile Reporter, LeaseKeeper and run Executor (agent/profile and
// agent/executor, exactly what agent/nodeagent wires for one node). What the
// pool shares is the plumbing around them: one controller-runtime manager,
// one informer over every bound QuantRun (label kquant.dev/node present,
// instead of one label-selected watch per node) and one controller whose
// workers hand each run to the Executor of its node.
//
// Why not N copies of nodeagent.Run: every agent has its own manager, cache,
// watch connection, work queue and HTTP client; at 1,000 nodes that is 1,000
// watches and ~20,000 goroutines in one process on a 2-core machine, and the
// harness would measure itself rather than the controller. The API traffic
// per node that matters for the controller (profile publish, Lease renewals,
// claim and finish writes with a fresh read before each) is unchanged; only
// the watch fan-out differs (one watch instead of N).
//
// With Options.Observe the agents are what they are beside run pods (the
// chart's default): observers that publish their profile and renew their
// Lease; the runs execute in run pods (test/runpodsim stands in for them).
package agentpool
