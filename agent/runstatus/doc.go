// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package runstatus writes the status of a QuantRun as whatever executes
// it: a run pod (agent/runmode, the default) or the agent itself
// (agent/executor, opt-in). Status carries every field such a writer owns
// in apply.QuantRunStatusOwners, and Apply sends them with server-side
// apply under the writer's field manager, conditional on the
// resourceVersion the writer decided on, so that a change made meanwhile
// (the controller failing the run, a deadline) conflicts rather than being
// overwritten. Both modes write through this one function, so their writes
// cannot drift apart.
package runstatus
