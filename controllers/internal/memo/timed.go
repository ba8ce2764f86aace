// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package memo

import (
	"sync"
	"time"
)

// Epoch identifies the state of a Timed memo at the start of a computation:
// Put keeps the result only if nothing invalidated the memo since.
type Epoch uint64

// Timed remembers values derived from the cache for TTL from the first Put
// of a generation; a later generation replaces the whole set. Values are
// shared: a caller must not change one it put or got.
type Timed[K comparable, V any] struct {
	// TTL is how long a generation of values is served.
	TTL time.Duration

	mu     sync.Mutex
	at     time.Time
	values map[K]V
	// epoch counts invalidations: a value computed before the latest one
	// read a cache older than the change that caused it, and is not kept.
	epoch Epoch
}

// Get returns key's value if it was put within TTL of now.
func (t *Timed[K, V]) Get(key K, now time.Time) (V, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.fresh(now) {
		var zero V
		return zero, false
	}
	v, ok := t.values[key]
	return v, ok
}

// Begin returns the epoch to pass to Put for a value computed from now on.
func (t *Timed[K, V]) Begin() Epoch {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.epoch
}

// Put remembers v for key, computed at now from a cache read in epoch; it
// keeps nothing when the memo was invalidated since, and starts a new
// generation when the current one is older than TTL.
func (t *Timed[K, V]) Put(key K, v V, now time.Time, epoch Epoch) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if epoch != t.epoch {
		return
	}
	if !t.fresh(now) {
		t.values, t.at = map[K]V{}, now
	}
	t.values[key] = v
}

// Invalidate forgets every value: the cache changed in a way they depend on.
func (t *Timed[K, V]) Invalidate() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.values = nil
	t.epoch++
}

// fresh reports whether the current generation serves at now; t.mu is held.
func (t *Timed[K, V]) fresh(now time.Time) bool {
	return t.values != nil && now.Sub(t.at) <= t.TTL && !now.Before(t.at)
}
