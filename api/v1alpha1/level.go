// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import "time"

// Preset returns the iterations and warmup steps of level l, as Execution
// documents them: Quick 20/3, Standard 200/20, Extended 2000/100; an empty
// or unknown level is Standard. This is the only place they are written.
func (l Level) Preset() (iterations, warmup int32) {
	switch l {
	case LevelQuick:
		return 20, 3
	case LevelExtended:
		return 2000, 100
	default:
		return 200, 20
	}
}

// RunTimeoutSeconds is the default time limit of one run of level l, from
// when its run pod is accepted by its node's kubelet (image pull and CUDA
// initialisation included): Quick 15 minutes, Standard 30 minutes, Extended 2
// hours; an empty or unknown level is Standard. The Quick level runs in
// seconds on a GPU (docs/benchmarks.md), so each limit leaves room for a
// slow image pull, the reference backend and emulated recipes, and still
// frees the GPU of a hung run the same hour.
func (l Level) RunTimeoutSeconds() int64 {
	switch l {
	case LevelQuick:
		return 15 * 60
	case LevelExtended:
		return 2 * 60 * 60
	default:
		return 30 * 60
	}
}

// RunTimeout is the time limit of a run executing exec: its
// runTimeoutSeconds, or the Standard level's for a run created before runs
// carried one.
func RunTimeout(exec Execution) time.Duration {
	if exec.RunTimeoutSeconds == nil {
		return Seconds(LevelStandard.RunTimeoutSeconds())
	}
	return Seconds(*exec.RunTimeoutSeconds)
}

// ExecutionForLevel returns exec with what it leaves out taken from the
// level's presets (empty level: Standard) and graphs defaulted to Both: the
// execution the job controller writes into a run, and the one kquantctl
// runs a manifest with.
func ExecutionForLevel(level Level, exec Execution) Execution {
	iterations, warmup := level.Preset()
	out := *exec.DeepCopy()
	if out.Graphs == "" {
		out.Graphs = GraphModeBoth
	}
	if out.Iterations == nil {
		out.Iterations = &iterations
	}
	if out.Warmup == nil {
		out.Warmup = &warmup
	}
	if out.RunTimeoutSeconds == nil {
		out.RunTimeoutSeconds = new(level.RunTimeoutSeconds())
	}
	return out
}
