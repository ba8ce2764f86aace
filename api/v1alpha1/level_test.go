// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"testing"
	"time"

	"k8s.io/utils/ptr"
)

func TestExecutionPresets(t *testing.T) {
	cases := map[string]struct {
		level               Level
		in                  Execution
		wantIters, wantWarm int32
		wantGraphs          GraphMode
		wantTimeout         int64
	}{
		"quick":             {level: LevelQuick, wantIters: 20, wantWarm: 3, wantGraphs: GraphModeBoth, wantTimeout: 900},
		"standard":          {level: LevelStandard, wantIters: 200, wantWarm: 20, wantGraphs: GraphModeBoth, wantTimeout: 1800},
		"unset is standard": {wantIters: 200, wantWarm: 20, wantGraphs: GraphModeBoth, wantTimeout: 1800},
		"extended":          {level: LevelExtended, wantIters: 2000, wantWarm: 100, wantGraphs: GraphModeBoth, wantTimeout: 7200},
		"explicit values win": {level: LevelExtended, in: Execution{Graphs: GraphModeEager, Iterations: ptr.To[int32](7), Warmup: ptr.To[int32](0), RunTimeoutSeconds: ptr.To[int64](5)},
			wantIters: 7, wantWarm: 0, wantGraphs: GraphModeEager, wantTimeout: 5},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ExecutionForLevel(tc.level, tc.in)
			if *got.Iterations != tc.wantIters || *got.Warmup != tc.wantWarm || got.Graphs != tc.wantGraphs || *got.RunTimeoutSeconds != tc.wantTimeout {
				t.Errorf("ExecutionForLevel() = %d/%d %s %ds, want %d/%d %s %ds", *got.Iterations, *got.Warmup, got.Graphs, *got.RunTimeoutSeconds,
					tc.wantIters, tc.wantWarm, tc.wantGraphs, tc.wantTimeout)
			}
			if RunTimeout(got) != time.Duration(tc.wantTimeout)*time.Second {
				t.Errorf("RunTimeout() = %v, want %ds", RunTimeout(got), tc.wantTimeout)
			}
		})
	}
}
