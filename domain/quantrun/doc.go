// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package quantrun is what every side knows about a QuantRun beyond its API
// type: deterministic names, the slot bookkeeping kept in annotations, and
// the activity predicates every controller must agree on. The reconcilers,
// kquantctl and the fakes all import it; how the controller writes a run's
// status is in controllers/internal/runstatus.
//
// Phase: the controller writes no status when it creates a run (the CRD
// defaults status.phase to Pending) or binds it (one spec write, with the
// bind time in an annotation). Like a Pod, a bound run's stored phase stays
// Pending until its agent starts it; Phase reports it as Bound, and the
// controllers' phase index and metrics use that derived phase.
package quantrun
