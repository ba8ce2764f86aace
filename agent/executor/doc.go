// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package executor runs the QuantRuns bound to this agent's node, when the
// agent executes runs itself (gpuAllocation None, --execution=None: nodes
// drained of other GPU work). By default runs execute in run pods
// (agent/runmode), which share with this package only what both import:
// the runner contract (agent/runner), the GPU guard around it
// (gpuguard.Guarded) and a run's status write (agent/runstatus). Run mode
// imports nothing from here, so the opt-in mode can change without
// touching the default one.
//
// The Executor is a controller on a cache that holds only the QuantRuns
// labelled kquant.dev/node=<node> (the controller sets the label when it
// binds a run), so the agent never lists or watches the cluster's runs; it
// also checks spec.nodeName, since a label alone is easy to get wrong. It
// runs at most one run per GPU at a time, each in its own goroutine, and
// moves a bound run → Running → Succeeded or Failed. Running is recorded
// only once the run has executed for RunningAfter (a second by default): a
// run that ends sooner goes from bound to its end in one status write, the
// unit a burst of short runs pays for. A bound run that waits
// for the agent has stored phase Pending (binding writes only the spec, as
// scheduling a Pod does), or Bound if an earlier manager bound it. The agent
// writes only the fields it owns (phase, agentID, bindTime copied from the
// kquant.dev/bind-time annotation, startTime, completionTime, results,
// message and its own conditions) with server-side apply under
// the field manager "kquant-agent". Every write carries the resourceVersion
// its decision was made on (the cached copy when a run starts, the claim's
// own write when it ends), so a change by the controller in between (a
// NodeLost failure, a deadline) or a cache that was behind makes the write
// conflict, and the decision is made again on a fresh read from the API
// server instead of overwriting it. Reading fresh only after a conflict
// saves two requests per run at fleet scale.
//
// Crash safety: a run of this node found Running under another agent ID
// was left behind by a previous agent process on this node; it is run again
// from the start (execution is idempotent) with the condition Restarted. A
// run whose agent died before it was recorded Running is still bound, and
// simply runs.
// Graceful shutdown (Drain): no new runs are taken, running ones get a
// grace period to finish; those that do not are cancelled and marked Failed
// with the condition Abandoned=True, those that do get Abandoned=False, so
// either way the record says which.
//
// What a run measures is the Runner's business: the real runner (reference
// or CUDA backend plus the measurement harness) plugs in through the Runner
// interface (agent/runner); simulate.Runner produces plausible deterministic results for
// tests and large simulations.
//
// Verbosity (internal/logging's ladder): Info transitions and failures,
// Debug runs ignored or waiting.
package executor
