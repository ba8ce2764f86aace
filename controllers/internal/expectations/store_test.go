// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package expectations

import (
	"testing"
	"time"
)

func TestStore(t *testing.T) {
	now := time.Unix(1700000000, 0)
	later := now.Add(2 * time.Minute)
	cases := []struct {
		name          string
		steps         func(s *Store[string])
		at            time.Time
		wantPending   bool
		wantExpecting bool
	}{
		{name: "nothing expected", steps: func(*Store[string]) {}, at: now},
		{name: "created, not in the cache yet", steps: func(s *Store[string]) { s.Expect("job", "run-0", now) },
			at: now, wantPending: true, wantExpecting: true},
		{name: "the cache shows another item", steps: func(s *Store[string]) {
			s.Expect("job", "run-0", now)
			s.Observed("job", "run-1")
		}, at: now, wantPending: true, wantExpecting: true},
		{name: "the cache shows it", steps: func(s *Store[string]) {
			s.Expect("job", "run-0", now)
			s.Observed("job", "run-1", "run-0")
		}, at: now},
		{name: "another owner's item", steps: func(s *Store[string]) { s.Expect("other", "run-0", now) }, at: now},
		{name: "given up after the TTL", steps: func(s *Store[string]) { s.Expect("job", "run-0", now) }, at: later},
		{name: "owner forgotten", steps: func(s *Store[string]) {
			s.Expect("job", "run-0", now)
			s.Forget("job")
		}, at: now},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &Store[string]{TTL: time.Minute}
			c.steps(s)
			if got := s.Expecting("job", "run-0", c.at); got != c.wantExpecting {
				t.Errorf("Expecting = %v, want %v", got, c.wantExpecting)
			}
			if got := s.Pending("job", c.at); got != c.wantPending {
				t.Errorf("Pending = %v, want %v", got, c.wantPending)
			}
		})
	}
}

func TestZeroTTLKeepsItemsUntilObserved(t *testing.T) {
	var s Store[int]
	now := time.Unix(0, 0)
	s.Expect(1, "a", now)
	if !s.Pending(1, now.Add(24*time.Hour)) {
		t.Fatal("an item of a Store without TTL expired")
	}
	s.Observed(1, "a")
	if s.Pending(1, now) {
		t.Fatal("an observed item is still pending")
	}
}
