// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpuguard

import (
	"errors"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
)

func TestLearn(t *testing.T) {
	tests := []struct {
		name        string
		known       uint32
		procs       []nvml.ProcessInfo
		wantPID     uint32
		wantForeign []uint32
	}{
		{name: "no context listed: nothing learned", procs: []nvml.ProcessInfo{}},
		{name: "the one new process is this one", procs: []nvml.ProcessInfo{{Pid: 100}}, wantPID: 100},
		{name: "two new processes cannot be told apart", procs: []nvml.ProcessInfo{{Pid: 100}, {Pid: 4242}},
			wantForeign: []uint32{100, 4242}},
		{name: "known PID and another process", known: 100, procs: []nvml.ProcessInfo{{Pid: 100}, {Pid: 4242}},
			wantPID: 100, wantForeign: []uint32{4242}},
		{name: "known PID alone", known: 100, procs: []nvml.ProcessInfo{{Pid: 100}}, wantPID: 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			self := &Self{pid: tt.known}
			err := New(gpuWith(tt.procs, nil, nil)).Learn(gpu, self)
			var inUse *InUseError
			var foreign []uint32
			if errors.As(err, &inUse) {
				for _, p := range inUse.Processes {
					foreign = append(foreign, p.PID)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantForeign, foreign); diff != "" {
				t.Errorf("foreign (-want +got):\n%s", diff)
			}
			if self.PID() != tt.wantPID {
				t.Errorf("learned PID %d, want %d", self.PID(), tt.wantPID)
			}
			if tt.wantPID != 0 && (!self.Allowed()(tt.wantPID) || self.Allowed()(tt.wantPID+1)) {
				t.Error("Allowed does not accept exactly the learned PID")
			}
		})
	}
}
