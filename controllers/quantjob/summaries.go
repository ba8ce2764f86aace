// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantjob

import (
	"k8s.io/apimachinery/pkg/types"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/internal/memo"
	"github.com/kquant/kquant/domain/summary"
)

// summaries keeps, per unfinished job, a summary.Accumulator of its succeeded
// runs, so that a reconcile adds the runs that succeeded since the last one
// instead of parsing and sorting every run's results again (an EachGPU job of
// 8,000 runs is reconciled hundreds of times while its runs finish).
// Reconciles of one job never run at once, so a job's accumulator is only
// ever used by one reconcile at a time.
type summaries struct {
	jobs memo.Map[types.NamespacedName, *jobSummary]
}

type jobSummary struct {
	uid types.UID
	acc *summary.Accumulator
}

// summarize returns the summary of succeeded, the job's succeeded runs now.
// Runs not seen before are added; when a run summarised before is no longer
// among them (deleted, or its slot ran again), the job's accumulator starts
// afresh.
func (s *summaries) summarize(key types.NamespacedName, uid types.UID, succeeded []summary.Run) *kquantv1alpha1.JobSummary {
	js, ok := s.jobs.Get(key)
	if !ok || js.uid != uid {
		js = &jobSummary{uid: uid, acc: summary.NewAccumulator()}
		s.jobs.Put(key, js)
	}
	known := 0
	for i := range succeeded {
		if js.acc.Has(succeeded[i].Name) {
			known++
		}
	}
	if known != js.acc.Len() {
		js.acc = summary.NewAccumulator()
	}
	for i := range succeeded {
		js.acc.Add(succeeded[i])
	}
	return js.acc.Summary()
}

// forget drops the job's accumulator: the job finished or is gone.
func (s *summaries) forget(key types.NamespacedName) { s.jobs.Delete(key) }
