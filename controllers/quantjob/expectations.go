// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantjob

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// createExpiry is how long a run this process created is expected to appear
// in the cache; after that the expectation is dropped (the run may have been
// deleted before the cache saw it), as kube-controller-manager's
// expectations expire.
const createExpiry = time.Minute

// creations remembers the runs this process created and the cache has not
// shown yet. Until it has, the job's runs as listed from the cache are
// incomplete, and a status computed from them would go backwards (a run
// created and counted Pending by the creating reconcile would vanish from the
// counts in the next one, triggered by the job's own status update).
type creations struct {
	mu   sync.Mutex
	runs map[types.NamespacedName]map[string]time.Time
}

// created records that run name of job key was created at now.
func (c *creations) created(key types.NamespacedName, name string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[types.NamespacedName]map[string]time.Time{}
	}
	if c.runs[key] == nil {
		c.runs[key] = map[string]time.Time{}
	}
	c.runs[key][name] = now
}

// unseen drops the expectations of the runs seen (listed from the cache) and
// of those older than createExpiry, and reports whether some run created by
// this process is still missing from the cache.
func (c *creations) unseen(key types.NamespacedName, seen []kquantv1alpha1.QuantRun, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	expected := c.runs[key]
	if len(expected) == 0 {
		return false
	}
	for i := range seen {
		delete(expected, seen[i].Name)
	}
	for name, at := range expected {
		if now.Sub(at) > createExpiry {
			delete(expected, name)
		}
	}
	if len(expected) == 0 {
		delete(c.runs, key)
		return false
	}
	return true
}

// forget drops the expectations of a deleted job.
func (c *creations) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.runs, key)
}
