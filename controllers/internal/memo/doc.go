// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package memo is the one way a reconciler keeps something in memory
// between reconciles, beside the informer cache: the status it last wrote
// before the cache shows it, a job's running summary, a binding assumed
// until the cache accounts for it, the fleet's evaluation for a burst of
// jobs. Each of those is a value per key that only this process knows, and
// the cache remains the truth: a memo only saves work or covers the time
// until the cache catches up.
//
// Map is a value per key, kept until the reconciler drops it. Timed is a
// value per key derived from the cache, served for a TTL and dropped at
// once when an event says the cache changed (Invalidate); a value computed
// before that invalidation is not kept (Begin, Put), since it was computed
// from what the event made stale. Both are safe for concurrent use, and
// their zero values are ready.
package memo
