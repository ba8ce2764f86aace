package apply

import (
	"encoding/json"
	"fmt"
	"slices"
)

// QuantRunStatusOwners is which field manager writes which QuantRun status
// field (by JSON name), the table docs/architecture.md repeats. All write
// with ForceOwnership and only the fields listed for them: the controller
// binds runs, says why they wait and fails them from outside (NodeLost,
// deadlines, a failed job, a lost or failed run pod); the executor runs
// them: a run pod (kquant-run) under gpuAllocation DevicePlugin or DRA, the
// agent (kquant-agent) under None. A field two managers write is the
// phase's hand-over: whoever moved the run last owns it.
//
//	field           controller (kquant-manager)        executor (kquant-run, or kquant-agent)
//	phase           Pending→Bound, Pending, →Failed    Running, Succeeded, Failed
//	bindTime        set when binding                   carried over
//	startTime       -                                  set when starting
//	completionTime  set when failing                   set when finishing
//	agentID         -                                  its own ID
//	allocatedGPU    -                                  the GPU it got
//	results         -                                  the run's results
//	reason          waiting and failure reasons        -
//	message         their message                      the run's message
//	conditions      -                                  Restarted, Abandoned
//	observedGeneration  (none: runs are immutable once bound)
func QuantRunStatusOwners() map[string][]string {
	c, a, r := ManagerController, ManagerAgent, ManagerRunPod
	return map[string][]string{
		"phase":          {c, a, r},
		"bindTime":       {c, a, r},
		"startTime":      {a, r},
		"completionTime": {c, a, r},
		"agentID":        {a, r},
		"allocatedGPU":   {a, r},
		"results":        {a, r},
		"reason":         {c},
		"message":        {c, a, r},
		"conditions":     {a, r},
	}
}

// Owns reports whether manager may write QuantRun status field.
func Owns(manager, field string) bool {
	for _, m := range QuantRunStatusOwners()[field] {
		if m == manager {
			return true
		}
	}
	return false
}

// StatusFields returns the JSON names of the QuantRun status fields that an
// apply configuration's status sets, for tests that check a writer against
// QuantRunStatusOwners.
func StatusFields(status any) ([]string, error) {
	b, err := json.Marshal(status)
	if err != nil {
		return nil, fmt.Errorf("encoding status: %w", err)
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decoding status: %w", err)
	}
	fields := make([]string, 0, len(m))
	for f := range m {
		fields = append(fields, f)
	}
	slices.Sort(fields)
	return fields, nil
}
