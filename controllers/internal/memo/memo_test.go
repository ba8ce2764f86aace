// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package memo

import (
	"testing"
	"time"
)

func TestTimed(t *testing.T) {
	now := time.Unix(1700000000, 0)
	cases := []struct {
		name  string
		steps func(m *Timed[string, int])
		at    time.Time
		want  bool
	}{
		{name: "nothing put", steps: func(*Timed[string, int]) {}, at: now},
		{name: "put, within the TTL", steps: func(m *Timed[string, int]) { m.Put("k", 1, now, m.Begin()) }, at: now.Add(time.Second), want: true},
		{name: "put, past the TTL", steps: func(m *Timed[string, int]) { m.Put("k", 1, now, m.Begin()) }, at: now.Add(3 * time.Second)},
		{name: "put, clock went back", steps: func(m *Timed[string, int]) { m.Put("k", 1, now, m.Begin()) }, at: now.Add(-time.Second)},
		{name: "invalidated", steps: func(m *Timed[string, int]) {
			m.Put("k", 1, now, m.Begin())
			m.Invalidate()
		}, at: now},
		{name: "computed before an invalidation", steps: func(m *Timed[string, int]) {
			epoch := m.Begin()
			m.Invalidate()
			m.Put("k", 1, now, epoch)
		}, at: now},
		{name: "an older generation is dropped whole", steps: func(m *Timed[string, int]) {
			m.Put("k", 1, now.Add(-3*time.Second), m.Begin())
			m.Put("other", 2, now, m.Begin())
		}, at: now},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &Timed[string, int]{TTL: 2 * time.Second}
			c.steps(m)
			if _, got := m.Get("k", c.at); got != c.want {
				t.Errorf("Get ok = %v, want %v", got, c.want)
			}
		})
	}
}

func TestMap(t *testing.T) {
	var m Map[string, int]
	if _, ok := m.Get("a"); ok {
		t.Fatal("the zero Map holds a value")
	}
	m.Put("a", 1)
	m.Put("b", 2)
	snap := m.Snapshot()
	m.DeleteFunc(func(_ string, v int) bool { return v == 1 })
	if _, ok := m.Get("a"); ok {
		t.Error("DeleteFunc kept a")
	}
	if v, ok := m.Get("b"); !ok || v != 2 {
		t.Errorf("b = %v %v, want 2", v, ok)
	}
	if len(snap) != 2 {
		t.Errorf("the snapshot changed with the Map: %v", snap)
	}
	m.Delete("b")
	if _, ok := m.Get("b"); ok {
		t.Error("Delete kept b")
	}
}
