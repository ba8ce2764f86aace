// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package expectations

import (
	"sync"
	"time"
)

// Store holds the items expected per owner key. Its zero value expects
// nothing and never expires an item; set TTL before first use. It is safe
// for concurrent use.
type Store[K comparable] struct {
	// TTL is how long an item is expected; zero keeps it until it is
	// observed or its owner forgotten.
	TTL time.Duration

	mu      sync.Mutex
	pending map[K]map[string]time.Time
}

// Expect records that item of owner key was created at now.
func (s *Store[K]) Expect(key K, item string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		s.pending = map[K]map[string]time.Time{}
	}
	if s.pending[key] == nil {
		s.pending[key] = map[string]time.Time{}
	}
	s.pending[key][item] = now
}

// Observed settles the items of key that the cache shows.
func (s *Store[K]) Observed(key K, items ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	expected := s.pending[key]
	if len(expected) == 0 {
		return
	}
	for _, item := range items {
		delete(expected, item)
	}
	if len(expected) == 0 {
		delete(s.pending, key)
	}
}

// Pending reports whether some item of key is still expected at now; it
// gives up the items older than TTL.
func (s *Store[K]) Pending(key K, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live(key, now)) > 0
}

// Expecting reports whether item of key is still expected at now; it gives
// up the items older than TTL.
func (s *Store[K]) Expecting(key K, item string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.live(key, now)[item]
	return ok
}

// Forget drops every expectation of key: its owner is gone.
func (s *Store[K]) Forget(key K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, key)
}

// live drops key's expired items and returns those left; s.mu is held.
func (s *Store[K]) live(key K, now time.Time) map[string]time.Time {
	expected := s.pending[key]
	if s.TTL > 0 {
		for item, at := range expected {
			if now.Sub(at) > s.TTL {
				delete(expected, item)
			}
		}
	}
	if len(expected) == 0 {
		delete(s.pending, key)
		return nil
	}
	return expected
}

// Len returns how many owners have items expected, expired or not: what a
// long-lived process must not let grow.
func (s *Store[K]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}
