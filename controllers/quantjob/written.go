// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantjob

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/internal/memo"
)

// written remembers, per job, the status this process last wrote and the
// resourceVersion the API server gave that write, until the cache shows that
// version (or a newer one). Every run event reconciles its job, usually before
// the job's own status update has reached the cache: computed against the
// cache's stale status, the same status was written again, and each such
// write was a conflict on the stale resourceVersion and a retry (6.6 status
// PATCHes per one-run job with 64 workers, docs/benchmarks.md "Controller at
// scale"). With the memo a reconcile compares with, and builds on, what it
// last wrote. Kubernetes' Job controller keeps such "expectations" for the
// same reason.
//
// resourceVersions are opaque strings that clients may only compare for
// equality, so the memo never orders them: it keeps the versions it wrote
// on (the chain of writes since the cache last showed one of them), and a
// cache at one of those is behind; a cache at the written version has caught
// up; a cache at any other version has moved on past the memo (or someone
// else wrote the job), and the cache is what counts again.
//
// Reconciles of one job never run at once, so a record read and then
// replaced is never raced by another write of the same job.
type written struct {
	jobs memo.Map[types.NamespacedName, writtenStatus]
}

type writtenStatus struct {
	uid             types.UID
	resourceVersion string
	status          *kquantv1alpha1.QuantJobStatus
	// writtenOn are the versions the chain of writes was made on, oldest
	// first: a cache at one of them has not seen the last write.
	writtenOn []string
}

// record remembers status as written for job (key, uid): the write was made
// on version base and the API server gave it resourceVersion. status must
// not be changed afterwards.
func (w *written) record(key types.NamespacedName, uid types.UID, base, resourceVersion string, status *kquantv1alpha1.QuantJobStatus) {
	writtenOn := []string{base}
	if prev, ok := w.jobs.Get(key); ok && prev.uid == uid && prev.resourceVersion == base {
		// Written on the memo itself: the cache may still be at any
		// version of the chain.
		writtenOn = append(slices.Clip(prev.writtenOn), base)
	}
	w.jobs.Put(key, writtenStatus{uid: uid, resourceVersion: resourceVersion, status: status, writtenOn: writtenOn})
}

// newerThanCache returns what this process last wrote for job (key, uid) when
// the cache, at cachedVersion, does not show it yet. It forgets the record
// once the cache has caught up or the name belongs to another job. The
// returned status is shared: read only.
func (w *written) newerThanCache(key types.NamespacedName, uid types.UID, cachedVersion string) (resourceVersion string, status *kquantv1alpha1.QuantJobStatus, ok bool) {
	rec, ok := w.jobs.Get(key)
	if !ok {
		return "", nil, false
	}
	if rec.uid != uid || !slices.Contains(rec.writtenOn, cachedVersion) {
		w.jobs.Delete(key)
		return "", nil, false
	}
	return rec.resourceVersion, rec.status, true
}

// forget drops the record of job key: it was deleted, or a write on the
// recorded version conflicted (someone else wrote the job since).
func (w *written) forget(key types.NamespacedName) { w.jobs.Delete(key) }
