// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package memo

import (
	"maps"
	"sync"
)

// Map remembers a value per key. Values are shared: a caller must not change
// one it put or got.
type Map[K comparable, V any] struct {
	mu     sync.Mutex
	values map[K]V
}

// Get returns key's value.
func (m *Map[K, V]) Get(key K) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.values[key]
	return v, ok
}

// Put remembers v for key.
func (m *Map[K, V]) Put(key K, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.values == nil {
		m.values = map[K]V{}
	}
	m.values[key] = v
}

// Delete forgets key.
func (m *Map[K, V]) Delete(key K) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.values, key)
}

// DeleteFunc forgets every key for which drop returns true; drop runs under
// the Map's lock and must not call the Map.
func (m *Map[K, V]) DeleteFunc(drop func(K, V) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	maps.DeleteFunc(m.values, drop)
}

// Snapshot returns a copy of the Map, to read without its lock.
func (m *Map[K, V]) Snapshot() map[K]V {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.values)
}

// Len returns how many keys the Map holds.
func (m *Map[K, V]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.values)
}
