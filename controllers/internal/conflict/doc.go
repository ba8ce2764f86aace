// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package conflict turns optimistic-concurrency conflicts into quick, quiet
// requeues. Every controller here writes conditionally on the version it read
// from its cache, so losing a race to another writer (an agent, another
// controller, its own previous write not yet in the cache) is routine: the
// reconcile simply runs again on fresh data, without an error log and without
// the exponential backoff that an error brings.
package conflict
