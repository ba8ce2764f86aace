// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package binder

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kquant/kquant/domain/scheduling"
)

func TestWaitingForGPU(t *testing.T) {
	gpu := func(node string, i int32) scheduling.GPU {
		return scheduling.GPU{Node: node, Index: i, UUID: fmt.Sprintf("GPU-%s-%d", node, i)}
	}
	eligible := []scheduling.GPU{gpu("a", 0), gpu("a", 1), gpu("b", 0)}
	cases := map[string]struct {
		pending  []scheduling.PendingRun
		bindings []scheduling.Binding
		free     int
		busy     []string
		foreign  map[string]string
		want     []waiting
	}{
		"no foreign allocation, nothing to say": {
			pending: []scheduling.PendingRun{{Name: "r0", Job: "j"}},
			busy:    []string{"GPU-a-0", "GPU-a-1", "GPU-b-0"},
			free:    1,
		},
		"its target GPU is held by another pod": {
			pending: []scheduling.PendingRun{{Name: "r0", Job: "j", TargetNode: "a", TargetGPU: "GPU-a-1"}},
			busy:    []string{"GPU-a-1"},
			foreign: map[string]string{"GPU-a-1": "ml/train-0"},
			free:    1,
			want:    []waiting{{run: "r0", message: "GPU GPU-a-1 is allocated to ml/train-0; the run waits until it is free"}},
		},
		"every eligible GPU busy, some held by other pods": {
			pending: []scheduling.PendingRun{{Name: "r0", Job: "j"}},
			busy:    []string{"GPU-a-0", "GPU-a-1", "GPU-b-0"},
			foreign: map[string]string{"GPU-a-0": "ml/train-0", "GPU-b-0": "ml/train-1"},
			free:    1,
			want:    []waiting{{run: "r0", message: "all 3 eligible GPUs are busy, 2 of them allocated to other pods ([ml/train-0 ml/train-1]); the run waits for a free GPU"}},
		},
		"a free GPU left: the run just was not reached": {
			pending: []scheduling.PendingRun{{Name: "r0", Job: "j"}},
			busy:    []string{"GPU-a-0", "GPU-b-0"},
			foreign: map[string]string{"GPU-a-0": "ml/train-0"},
			free:    1,
		},
		"held back by maxParallel, not by GPUs": {
			pending: []scheduling.PendingRun{{Name: "r0", Job: "j", TargetGPU: "GPU-a-1"}},
			foreign: map[string]string{"GPU-a-1": "ml/train-0"},
			free:    0,
		},
		"bound in this pass": {
			pending:  []scheduling.PendingRun{{Name: "r0", Job: "j"}},
			bindings: []scheduling.Binding{{Run: "r0", GPU: gpu("a", 1)}},
			busy:     []string{"GPU-a-0", "GPU-a-1", "GPU-b-0"},
			foreign:  map[string]string{"GPU-a-0": "ml/train-0"},
			free:     1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			busy := map[string]bool{}
			for _, b := range tc.busy {
				busy[b] = true
			}
			jobs := map[string]*scheduling.JobCapacity{"j": {Free: tc.free, Eligible: eligible}}
			got := waitingForGPU(tc.pending, tc.bindings, jobs, scheduling.BusySet(busy), tc.foreign)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(waiting{})); diff != "" {
				t.Errorf("waitingForGPU (-want +got):\n%s", diff)
			}
		})
	}
}
