// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package apply

import (
	"encoding/json"
	"fmt"
	"slices"
)

// QuantRunStatusOwners is which field manager writes which QuantRun status
// field (by JSON name), the table docs/architecture.md repeats. Every writer
// applies with ForceOwnership and only the fields listed for it: the
// controller binds runs and fails them from outside (NodeLost, deadlines, a
// failed job, a lost run pod), the run pod executes its one run (the
// default, gpuAllocation DevicePlugin or DRA), and the agent executes runs
// itself only with gpuAllocation None. A field two managers write is the
// phase's hand-over: whoever moved the run last owns it.
//
// Results have one writer per run: its executor (run pod or agent), or the
// controller when a run pod ended the run and its own write never landed
// (the API server was away): the controller then records the outcome the pod
// left in its termination message (internal/runoutcome), conditional on the
// run as it read it, still unfinished. The pod has exited by then, and a
// finished run takes no other write (the transition rules), so the two never
// both write one run's results.
//
//	field           controller (kquant-manager)  run pod (kquant-run)        agent (kquant-agent)
//	phase           Pending→Bound, →Failed,      Running, Succeeded, Failed  Running, Succeeded, Failed
//	                the exited pod's end
//	bindTime        set when binding             carried over                carried over
//	startTime       -                            set when starting           set when starting
//	completionTime  set when failing; the pod's   set when finishing          set when finishing
//	agentID         -                            <pod>/<pod UID>             its own ID
//	allocatedGPU    -                            the GPU the kubelet gave    the GPU it ran on
//	results         from the exited pod's msg    the run's results           the run's results
//	reason          the failure's reason         GPUInUse, RunPodLost, ...   -
//	message         the failure's message        the run's message           the run's message
//	runPod          set once the run pod exists  -                           -
//	conditions      -                            -                           Restarted, Abandoned
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
		"results":        {c, a, r},
		"reason":         {c, r},
		"message":        {c, a, r},
		"runPod":         {c},
		"conditions":     {a},
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
