// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantjob

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/summary"
)

// summaries keeps, per unfinished job, a summary.Accumulator of its succeeded
// runs, so that a reconcile adds the runs that succeeded since the last one
// instead of parsing and sorting every run's results again (an EachGPU job of
// 8,000 runs is reconciled hundreds of times while its runs finish).
// Reconciles of one job never run at once; the lock guards the map.
type summaries struct {
	mu   sync.Mutex
	jobs map[types.NamespacedName]*jobSummary
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
	s.mu.Lock()
	js := s.jobs[key]
	if js == nil || js.uid != uid {
		js = &jobSummary{uid: uid, acc: summary.NewAccumulator()}
		if s.jobs == nil {
			s.jobs = map[types.NamespacedName]*jobSummary{}
		}
		s.jobs[key] = js
	}
	s.mu.Unlock()
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
func (s *summaries) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.jobs, key)
}
