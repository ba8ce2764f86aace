package quantjob

import (
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
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
type written struct {
	mu   sync.Mutex
	jobs map[types.NamespacedName]writtenStatus
}

type writtenStatus struct {
	uid             types.UID
	resourceVersion string
	status          *kquantv1alpha1.QuantJobStatus
}

// record remembers status as written for job (key, uid) at resourceVersion.
// status must not be changed afterwards.
func (w *written) record(key types.NamespacedName, uid types.UID, resourceVersion string, status *kquantv1alpha1.QuantJobStatus) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.jobs == nil {
		w.jobs = map[types.NamespacedName]writtenStatus{}
	}
	w.jobs[key] = writtenStatus{uid: uid, resourceVersion: resourceVersion, status: status}
}

// newerThanCache returns what this process last wrote for job (key, uid) when
// the cache, at cachedVersion, does not show it yet. It forgets the record
// once the cache has caught up or the name belongs to another job. The
// returned status is shared: read only.
func (w *written) newerThanCache(key types.NamespacedName, uid types.UID, cachedVersion string) (resourceVersion string, status *kquantv1alpha1.QuantJobStatus, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	rec, ok := w.jobs[key]
	if !ok {
		return "", nil, false
	}
	if rec.uid != uid || !olderVersion(cachedVersion, rec.resourceVersion) {
		delete(w.jobs, key)
		return "", nil, false
	}
	return rec.resourceVersion, rec.status, true
}

// forget drops the record of job key: it was deleted, or a write on the
// recorded version conflicted (someone else wrote the job since).
func (w *written) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.jobs, key)
}

// olderVersion reports whether resourceVersion a is older than b. Versions
// are opaque to clients, but the API server's are etcd revisions: decimal
// numbers that grow with every write. Where they are not numbers, only equal
// versions count as caught up, and an unknown one as newer: a write on an old
// version then conflicts, and the conflict forgets the record.
func olderVersion(a, b string) bool {
	if a == b {
		return false
	}
	na, errA := strconv.ParseUint(a, 10, 64)
	nb, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return true
	}
	return na < nb
}
