package v1alpha1

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
	return out
}
