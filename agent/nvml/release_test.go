// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package nvml_test

import (
	"context"
	"errors"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/kquant/kquant/agent/nvml"
	"github.com/kquant/kquant/agent/simulate"
)

// TestReleaseClosesEveryHandleAndReopens drives the release a GPU Operator
// driver upgrade asks for through go-nvml's mock: every Init is matched by a
// Shutdown and every event set freed, discovery refuses to touch the
// library meanwhile, and Reopen finds the GPUs again.
func TestReleaseClosesEveryHandleAndReopens(t *testing.T) {
	ctx := context.Background()
	sim := simulate.NewNode("upgrading-1", mustParse(t, "H100:2"))
	lib := sim.Library().(*mock.Interface)
	d, err := nvml.Open(ctx, lib)
	if err != nil {
		t.Fatal(err)
	}
	if got := sim.OpenHandles(); got != 2 {
		t.Fatalf("open handles after Open = %d, want 2 (NVML and the XID event set)", got)
	}

	steps := []struct {
		name         string
		do           func() error
		wantHandles  int
		wantInits    int
		wantShutdown int
		wantSets     int
		wantDiscover error
	}{
		{name: "release", do: d.Release, wantHandles: 0, wantInits: 1, wantShutdown: 1, wantSets: 1, wantDiscover: nvml.ErrReleased},
		{name: "release again", do: d.Release, wantHandles: 0, wantInits: 1, wantShutdown: 1, wantSets: 1, wantDiscover: nvml.ErrReleased},
		{name: "reopen", do: func() error { return d.Reopen(ctx) }, wantHandles: 2, wantInits: 2, wantShutdown: 1, wantSets: 2},
		{name: "reopen again", do: func() error { return d.Reopen(ctx) }, wantHandles: 2, wantInits: 2, wantShutdown: 1, wantSets: 2},
		{name: "close", do: d.Close, wantHandles: 0, wantInits: 2, wantShutdown: 2, wantSets: 2, wantDiscover: nvml.ErrReleased},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := sim.OpenHandles(); got != s.wantHandles {
			t.Errorf("%s: open handles = %d, want %d", s.name, got, s.wantHandles)
		}
		if got := len(lib.InitCalls()); got != s.wantInits {
			t.Errorf("%s: Init calls = %d, want %d", s.name, got, s.wantInits)
		}
		if got := len(lib.ShutdownCalls()); got != s.wantShutdown {
			t.Errorf("%s: Shutdown calls = %d, want %d", s.name, got, s.wantShutdown)
		}
		if got := len(lib.EventSetCreateCalls()); got != s.wantSets {
			t.Errorf("%s: EventSetCreate calls = %d, want %d", s.name, got, s.wantSets)
		}
		node, err := d.Discover(ctx)
		if !errors.Is(err, s.wantDiscover) {
			t.Errorf("%s: Discover error = %v, want %v", s.name, err, s.wantDiscover)
		}
		if s.wantDiscover == nil && (node == nil || len(node.GPUs) != 2) {
			t.Errorf("%s: Discover found %+v, want 2 GPUs", s.name, node)
		}
	}
}

// TestReopenForgetsXIDsOfTheOldDriver: the XIDs seen before an upgrade do
// not outlive the driver that reported them.
func TestReopenForgetsXIDsOfTheOldDriver(t *testing.T) {
	ctx := context.Background()
	sim := simulate.NewNode("upgrading-2", mustParse(t, "H100:1"))
	d, err := nvml.Open(ctx, sim.Library())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.Close() }()
	sim.InjectXID(0, 79)
	if node, err := d.Discover(ctx); err != nil || node.GPUs[0].HealthMessage == "" {
		t.Fatalf("before the upgrade: %+v, %v; want the XID reported", node, err)
	}
	if err := d.Release(); err != nil {
		t.Fatal(err)
	}
	if err := d.Reopen(ctx); err != nil {
		t.Fatal(err)
	}
	node, err := d.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if msg := node.GPUs[0].HealthMessage; msg != "" {
		t.Errorf("after the upgrade: health message %q, want none", msg)
	}
}
