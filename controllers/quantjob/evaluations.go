// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantjob

import (
	"time"

	"github.com/kquant/kquant/controllers/internal/memo"
	"github.com/kquant/kquant/domain/scheduling"
)

// EvaluationTTL is how long an evaluation of the fleet serves the jobs that
// ask the same thing. A Lease that expires (no event) goes unseen by expansion
// at most this long; the binder evaluates the fleet afresh in every pass.
const EvaluationTTL = time.Second

// evaluations memoises the fleet's evaluation per requirement: a burst of
// 10,000 AnyGPU jobs evaluated the whole fleet (a thousand profiles) once per
// job, which made the job controller the manager's main CPU cost. Fleet events
// that can make a job schedulable (profiles, Leases appearing or reviving,
// Node labels) clear it before they requeue the waiting jobs, so those
// reconciles see the change; an evaluation that started before such a clear
// read the fleet before the change and is not kept (a reconcile that started
// before a Lease appeared stored its result after the Lease's event had
// cleared the memo, and the job stayed Unschedulable on it).
type evaluations struct {
	byKey memo.Timed[string, *evaluation]
}

func newEvaluations() *evaluations {
	return &evaluations{byKey: memo.Timed[string, *evaluation]{TTL: EvaluationTTL}}
}

// evaluation is the fleet evaluated for one requirement, with its eligible
// GPUs listed once (8,000 of them at a thousand nodes: listing them for every
// job of a burst was most of the allocation). Read only.
type evaluation struct {
	results  []scheduling.NodeResult
	eligible []scheduling.GPU
}

func newEvaluation(results []scheduling.NodeResult) *evaluation {
	return &evaluation{results: results, eligible: scheduling.EligibleGPUs(results)}
}

// get returns the results for key evaluated within EvaluationTTL of now.
func (e *evaluations) get(key string, now time.Time) (*evaluation, bool) {
	if key == "" {
		return nil, false
	}
	return e.byKey.Get(key, now)
}

// begin returns the epoch to pass to put for an evaluation starting now.
func (e *evaluations) begin() memo.Epoch { return e.byKey.Begin() }

// put records results for key, evaluated at now from a fleet read in epoch.
func (e *evaluations) put(key string, ev *evaluation, now time.Time, epoch memo.Epoch) {
	if key == "" {
		return
	}
	e.byKey.Put(key, ev, now, epoch)
}

// invalidate forgets every evaluation: the fleet changed.
func (e *evaluations) invalidate() { e.byKey.Invalidate() }
