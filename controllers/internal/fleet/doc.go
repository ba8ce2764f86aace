// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package fleet reads the fleet, as the scheduler needs it, from the manager's
// cache: every GPUNodeProfile with its agent's Lease and its Node's labels. It
// also holds the event filters and mappings that wake controllers when the
// fleet changes, so that every controller reacts to the same things.
package fleet
