package quantjob

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// expansions remembers the jobs this process expanded and recorded (status
// total written) until the cache shows that status. Without it, a reconcile
// that the new runs trigger before the job's own status update reaches the
// cache sees total 0 and a partial list of runs, and expands again: each
// missing run is a create that fails with AlreadyExists (89 wasted creates for
// an 800-run job in test/scale). Kubernetes' Job controller keeps
// "expectations" for the same reason.
type expansions struct {
	mu  sync.Mutex
	uid map[types.NamespacedName]types.UID
}

// done records that job (key, uid) was expanded and its status written.
func (e *expansions) done(key types.NamespacedName, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.uid == nil {
		e.uid = map[types.NamespacedName]types.UID{}
	}
	e.uid[key] = uid
}

// pending reports whether job (key, uid) still needs expanding by the cache's
// total, and forgets the record once the cache has caught up (total > 0) or
// the name belongs to another job now.
func (e *expansions) pending(key types.NamespacedName, uid types.UID, total int32) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	recorded, ok := e.uid[key]
	if ok && (total > 0 || recorded != uid) {
		delete(e.uid, key)
		ok = recorded == uid
	}
	return total == 0 && !ok
}

// forget drops the record of a deleted job.
func (e *expansions) forget(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.uid, key)
}
