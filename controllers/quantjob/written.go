package quantjob

import (
	"strconv"
	"sync"
	"time"

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
