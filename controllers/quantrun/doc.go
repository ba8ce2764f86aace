// Package quantrun is what the controllers know about a QuantRun beyond its API
// type: deterministic names, the slot bookkeeping kept in annotations, the
// activity predicates every controller must agree on, and the one way the
// controller writes run status.
//
// Status ownership: the controller and the node agents both write QuantRun
// status, with server-side apply under different field managers
// ("kquant-manager" here, "kquant-agent" for agents). The controller owns
// phase while it sets Pending, Bound or a Failed of its own (NodeLost,
// DeadlineExceeded, BackoffLimitExceeded), plus bindTime, reason, message and
// completionTime of those failures; the agent owns agentID, startTime,
// results, conditions and the phases it sets. Both force ownership of phase, the
// one field they share, and every controller apply carries the run's
// resourceVersion, so a stale cache can never overwrite an agent's Succeeded
// with a NodeLost: the apply fails with a conflict and the reconcile retries
// on fresh data.
package quantrun
