// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package scheduling

import (
	"testing"
	"time"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
)

func TestLeaseFresh(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		renewed   time.Time
		duration  time.Duration
		wantFresh bool
	}{
		"renewed just now":          {renewed: now, duration: 40 * time.Second, wantFresh: true},
		"renewed 39s ago":           {renewed: now.Add(-39 * time.Second), duration: 40 * time.Second, wantFresh: true},
		"renewed exactly 40s ago":   {renewed: now.Add(-40 * time.Second), duration: 40 * time.Second, wantFresh: false},
		"renewed long ago":          {renewed: now.Add(-time.Hour), duration: 40 * time.Second, wantFresh: false},
		"short lease still running": {renewed: now.Add(-time.Second), duration: 2 * time.Second, wantFresh: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := builders.MakeLease("kquant-agent-a", "ns").RenewedAt(tc.renewed).Duration(tc.duration).Obj()
			if got := LeaseFresh(l, now); got != tc.wantFresh {
				t.Errorf("LeaseFresh() = %v, want %v", got, tc.wantFresh)
			}
		})
	}
	if LeaseFresh(nil, now) {
		t.Error("LeaseFresh(nil) = true, want false")
	}
}

func TestLeaseRevived(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lease := func(renewed time.Time) *builders.LeaseWrapper {
		return builders.MakeLease("kquant-agent-a", "ns").RenewedAt(renewed).Duration(40 * time.Second)
	}
	cases := map[string]struct {
		oldRenew, newRenew time.Time
		want               bool
	}{
		"routine renewal":        {oldRenew: t0, newRenew: t0.Add(10 * time.Second), want: false},
		"renewal after a gap":    {oldRenew: t0, newRenew: t0.Add(41 * time.Second), want: true},
		"renewal at expiry":      {oldRenew: t0, newRenew: t0.Add(40 * time.Second), want: true},
		"no change in renewTime": {oldRenew: t0, newRenew: t0, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := LeaseRevived(lease(tc.oldRenew).Obj(), lease(tc.newRenew).Obj()); got != tc.want {
				t.Errorf("LeaseRevived() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNodeForLease(t *testing.T) {
	if n, ok := NodeForLease(kquantv1alpha1.AgentLeaseName("gpu-7")); !ok || n != "gpu-7" {
		t.Errorf("NodeForLease(AgentLeaseName(gpu-7)) = %q, %v", n, ok)
	}
	for _, name := range []string{"kquant-manager", "kquant-agent-", "other"} {
		if _, ok := NodeForLease(name); ok {
			t.Errorf("NodeForLease(%q) = true, want false", name)
		}
	}
}
