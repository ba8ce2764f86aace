package v1alpha1

import (
	"testing"

	"k8s.io/utils/ptr"
)

func TestExecutionPresets(t *testing.T) {
	cases := map[string]struct {
		level               Level
		in                  Execution
		wantIters, wantWarm int32
		wantGraphs          GraphMode
	}{
		"quick":             {level: LevelQuick, wantIters: 20, wantWarm: 3, wantGraphs: GraphModeBoth},
		"standard":          {level: LevelStandard, wantIters: 200, wantWarm: 20, wantGraphs: GraphModeBoth},
		"unset is standard": {wantIters: 200, wantWarm: 20, wantGraphs: GraphModeBoth},
		"extended":          {level: LevelExtended, wantIters: 2000, wantWarm: 100, wantGraphs: GraphModeBoth},
		"explicit values win": {level: LevelExtended, in: Execution{Graphs: GraphModeEager, Iterations: ptr.To[int32](7), Warmup: ptr.To[int32](0)},
			wantIters: 7, wantWarm: 0, wantGraphs: GraphModeEager},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ExecutionForLevel(tc.level, tc.in)
			if *got.Iterations != tc.wantIters || *got.Warmup != tc.wantWarm || got.Graphs != tc.wantGraphs {
				t.Errorf("ExecutionForLevel() = %d/%d %s, want %d/%d %s", *got.Iterations, *got.Warmup, got.Graphs, tc.wantIters, tc.wantWarm, tc.wantGraphs)
			}
		})
	}
}
