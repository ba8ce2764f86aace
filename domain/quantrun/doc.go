// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package quantrun is what the controllers know about a QuantRun beyond its API
// type: deterministic names, the slot bookkeeping kept in annotations, the
// activity predicates every controller must agree on, and the one way the
// controller writes run status.
//
// Phase: the controller writes no status when it creates a run (the CRD
// defaults status.phase to Pending) or binds it (one spec write, with the
// bind time in an annotation). Like a Pod, a bound run's stored phase stays
// Pending until its agent starts it; Phase reports it as Bound, and the
// controllers' phase index and metrics use that derived phase.
//
// Status ownership: the controller and the node agents both write QuantRun
// status, with server-side apply under different field managers
// ("kquant-manager" here, "kquant-agent" for agents). The controller owns
// phase while it sets a Failed of its own (NodeLost, DeadlineExceeded,
// BackoffLimitExceeded), plus reason, message and completionTime of those
// failures; the agent owns agentID, startTime, results, conditions and the
// phases it sets. Both carry bindTime (from the annotation) in their writes. Both force ownership of phase, the
// one field they share, and every controller apply carries the run's
// resourceVersion, so a stale cache can never overwrite an agent's Succeeded
// with a NodeLost: the apply fails with a conflict and the reconcile retries
// on fresh data.
package quantrun
