// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package runstatus is the one way the controller writes a QuantRun's
// status (Apply, a Change), used by every reconciler that fails, waits or
// finishes a run.
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
package runstatus
