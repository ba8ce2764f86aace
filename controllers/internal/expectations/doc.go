// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package expectations remembers what a reconciler created and its
// informer cache does not show yet, in the manner of Kueue's
// pkg/util/expectations and kube-controller-manager's expectations: until
// the cache shows an object this process created, a decision made on the
// cache would not count it (a job's status going backwards, a run pod
// taken for lost and created twice).
//
// A Store is keyed by the owner the reconciler works on (a job, a run) and
// holds, per owner, the items expected (run names, a run's UID) and when
// each was created. An item is settled when the cache shows it (Observed)
// and given up after the Store's TTL, since the object may have been
// deleted before the cache ever saw it. Every reconciler that expects
// creations uses this one Store, so the expiry and the locking are written
// once.
package expectations
