// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kquant/kquant/agent/simulate"
)

func TestDriverDescriptorsKeepsOnlyTheDriver(t *testing.T) {
	dir := t.TempDir()
	for name, target := range map[string]string{"3": "/dev/nvidiactl", "4": "/dev/nvidia0", "5": "/tmp/log", "6": "socket:[1234]"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := driverDescriptors(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"3 -> /dev/nvidiactl", "4 -> /dev/nvidia0"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("driverDescriptors = %q, want %q", got, want)
	}
}

// TestRunOnSimulatedNode runs the sequence on a simulated node, whose
// handles are no descriptors: the report has every step and no error.
func TestRunOnSimulatedNode(t *testing.T) {
	spec, err := simulate.Parse("H100:2")
	if err != nil {
		t.Fatal(err)
	}
	sim := simulate.NewNode("release", spec)
	var out bytes.Buffer
	if err := run(context.Background(), &out, sim.Library(), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"after open (driver " + simulate.DriverVersion + ", 2 GPUs)", "after release (released)", "after reopen"} {
		if !strings.Contains(out.String(), step) {
			t.Errorf("report lacks %q:\n%s", step, out.String())
		}
	}
	if got := sim.OpenHandles(); got != 0 {
		t.Errorf("%d handles open after the command, want 0", got)
	}
}
