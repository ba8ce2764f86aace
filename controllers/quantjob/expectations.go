// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantjob

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/internal/expectations"
)

// createExpiry is how long a run this process created is expected to appear
// in the cache; after that the expectation is dropped (the run may have been
// deleted before the cache saw it), as kube-controller-manager's
// expectations expire.
const createExpiry = time.Minute

// creations are the runs this process created and the cache has not shown
// yet, per job. Until it has, the job's runs as listed from the cache are
// incomplete, and a status computed from them would go backwards (a run
// created and counted Pending by the creating reconcile would vanish from the
// counts in the next one, triggered by the job's own status update).
type creations struct {
	store expectations.Store[types.NamespacedName]
}

func newCreations() *creations {
	return &creations{store: expectations.Store[types.NamespacedName]{TTL: createExpiry}}
}

// created records that run name of job key was created at now.
func (c *creations) created(key types.NamespacedName, name string, now time.Time) {
	c.store.Expect(key, name, now)
}

// unseen settles the runs seen (listed from the cache) and reports whether
// some run created by this process is still missing from the cache.
func (c *creations) unseen(key types.NamespacedName, seen []kquantv1alpha1.QuantRun, now time.Time) bool {
	if !c.store.Pending(key, now) {
		// Nothing expected: the common case costs no list of names.
		return false
	}
	names := make([]string, len(seen))
	for i := range seen {
		names[i] = seen[i].Name
	}
	c.store.Observed(key, names...)
	return c.store.Pending(key, now)
}

// forget drops the expectations of a deleted job.
func (c *creations) forget(key types.NamespacedName) { c.store.Forget(key) }
