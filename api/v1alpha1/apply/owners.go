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
// applies with ForceOwnership and only the fields listed for it (through
// QuantRunStatus): the controller fails runs from outside (NodeLost,
// deadlines, a failed job, a lost run pod) and records why a run waits and
// which pod runs it, the run pod executes its one run (the default,
// gpuAllocation DevicePlugin or DRA), the agent executes runs itself only
// with gpuAllocation None, and a preflight init container records each of
// its checks as a finished run of its own. A field two managers write is
// the phase's hand-over: whoever moved the run last owns it.
//
// Binding is no status write: the binder writes the run's spec (node, GPU),
// its node label and its bind-time annotation in one patch, and the stored
// phase stays Pending until the run starts; quantrun.Phase reports such a run
// as Bound. status.bindTime is copied from the annotation by the first status
// write after binding, whoever makes it.
//
// Results have one writer per run: its executor (run pod or agent), or the
// controller when a run pod ended the run and its own write never landed
// (the API server was away): the controller then records the outcome the pod
// left in its termination message (internal/runoutcome), conditional on the
// run as it read it, still unfinished. The pod has exited by then, and a
// finished run takes no other write (the transition rules), so the two never
// both write one run's results.
//
//	field           controller (kquant-manager)   run pod (kquant-run)        agent (kquant-agent)        preflight (kquant-preflight)
//	phase           Pending carried over; Failed; Running, Succeeded, Failed  Running, Succeeded, Failed  Succeeded, Failed
//	                the exited pod's end
//	bindTime        copied from the annotation    copied from the annotation  copied from the annotation  -
//	startTime       -                             set when starting           set when starting           the check's time
//	completionTime  set when failing; the pod's   set when finishing          set when finishing          the check's time
//	agentID         -                             <pod>/<pod UID>             its own ID                  <pod>/<pod UID>
//	allocatedGPU    -                             the GPU the kubelet gave    the GPU it ran on           the GPU checked
//	results         from the exited pod's msg     the run's results           the run's results           the check's results
//	reason          waits (WaitingForGPU,         GPUInUse, RunPodLost, ...   -                           the failure's reason
//	                RunPod*); the failure's
//	message         the failure's message         the run's message           the run's message           the check's message
//	runPod          set once the run pod exists   -                           -                           -
//	conditions      -                             -                           Restarted, Abandoned        -
//	observedGeneration  (none: runs are immutable once bound)
func QuantRunStatusOwners() map[string][]string {
	c, a, r, p := ManagerController, ManagerAgent, ManagerRunPod, ManagerPreflight
	return map[string][]string{
		"phase":          {c, a, r, p},
		"bindTime":       {c, a, r},
		"startTime":      {a, r, p},
		"completionTime": {c, a, r, p},
		"agentID":        {a, r, p},
		"allocatedGPU":   {a, r, p},
		"results":        {c, a, r, p},
		"reason":         {c, r, p},
		"message":        {c, a, r, p},
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
