// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package idlevalidation

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
)

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	const idleFor, interval = 30 * time.Minute, time.Hour
	cases := []struct {
		name     string
		node     Node
		now      time.Time
		wantDue  bool
		wantNext time.Time
	}{
		{name: "held GPU waits for an event", node: Node{}, now: t0, wantNext: time.Time{}},
		{name: "idle too briefly waits for idleFor", node: Node{IdleSince: t0}, now: t0.Add(10 * time.Minute), wantNext: t0.Add(idleFor)},
		{name: "idle for idleFor is due", node: Node{IdleSince: t0}, now: t0.Add(idleFor), wantDue: true},
		{name: "a job in flight holds the next back", node: Node{IdleSince: t0, LastStart: t0.Add(-2 * interval), Active: true}, now: t0.Add(2 * idleFor)},
		{name: "the last job's interval holds it back", node: Node{IdleSince: t0, LastStart: t0.Add(-10 * time.Minute)}, now: t0.Add(idleFor),
			wantNext: t0.Add(50 * time.Minute)},
		{name: "idle again after the interval is due", node: Node{IdleSince: t0, LastStart: t0.Add(-time.Hour)}, now: t0.Add(idleFor), wantDue: true},
		{name: "after the interval, idle time still counts", node: Node{IdleSince: t0, LastStart: t0.Add(-2 * time.Hour)}, now: t0.Add(time.Minute),
			wantNext: t0.Add(idleFor)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			due, next := Decide(tc.node, tc.now, idleFor, interval)
			if due != tc.wantDue || !next.Equal(tc.wantNext) {
				t.Errorf("Decide = (%t, %s), want (%t, %s)", due, next, tc.wantDue, tc.wantNext)
			}
		})
	}
}

func TestIdleSince(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	later := func(p *kquantv1alpha1.GPUNodeProfile) *kquantv1alpha1.GPUNodeProfile {
		p.Status.GPUs[1].FreeSince = &metav1.Time{Time: t0.Add(time.Minute)}
		return p
	}
	cases := []struct {
		name    string
		profile *kquantv1alpha1.GPUNodeProfile
		want    time.Time
	}{
		{name: "every GPU free: since the last freed", profile: later(builders.MakeGPUNodeProfile("n").GPUs(builders.H100, 2).FreeSince(t0).Ready().Obj()),
			want: t0.Add(time.Minute)},
		{name: "one GPU held", profile: builders.MakeGPUNodeProfile("n").GPUs(builders.H100, 2).FreeSince(t0).HeldBy(1, "ns", "train").Ready().Obj()},
		{name: "allocations not read", profile: builders.MakeGPUNodeProfile("n").GPUs(builders.H100, 2).Ready().Obj()},
		{name: "agent not Ready", profile: builders.MakeGPUNodeProfile("n").GPUs(builders.H100, 2).FreeSince(t0).NotReady().Obj()},
		{name: "driver upgrading", profile: builders.MakeGPUNodeProfile("n").GPUs(builders.H100, 2).FreeSince(t0).Ready().DriverUpgrading("drain-required").Obj()},
		{name: "no GPU", profile: builders.MakeGPUNodeProfile("n").Ready().Obj()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := IdleSince(tc.profile); !got.Equal(tc.want) {
				t.Errorf("IdleSince = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestJobNameAndWindow(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	if a, b := JobName("p", "node-a", 0), JobName("p", "node-b", 0); a == b {
		t.Errorf("two nodes share the job name %s", a)
	}
	if a, b := JobName("p", "node-a", 0), JobName("p", "node-a", 1); a == b {
		t.Errorf("two windows share the job name %s", a)
	}
	for _, tc := range []struct {
		now  time.Time
		want int64
	}{{t0.Add(-time.Minute), 0}, {t0, 0}, {t0.Add(59 * time.Minute), 0}, {t0.Add(time.Hour), 1}, {t0.Add(150 * time.Minute), 2}} {
		if got := Window(t0, tc.now, time.Hour); got != tc.want {
			t.Errorf("Window at %s = %d, want %d", tc.now.Sub(t0), got, tc.want)
		}
	}
}
