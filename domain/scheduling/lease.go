// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package scheduling

import (
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// NodeForLease returns the node whose agent renews the Lease called name, and
// false for Leases that are not agents' (the manager's own leader Lease, say).
func NodeForLease(name string) (string, bool) {
	node, ok := strings.CutPrefix(name, kquantv1alpha1.AgentLeasePrefix)
	return node, ok && node != ""
}

// LeaseExpiry is when lease expires: its last renewal (or acquisition) plus its
// duration. A Lease without either never was fresh and reports false.
func LeaseExpiry(lease *coordinationv1.Lease) (time.Time, bool) {
	if lease == nil || lease.Spec.LeaseDurationSeconds == nil {
		return time.Time{}, false
	}
	var last time.Time
	switch {
	case lease.Spec.RenewTime != nil:
		last = lease.Spec.RenewTime.Time
	case lease.Spec.AcquireTime != nil:
		last = lease.Spec.AcquireTime.Time
	default:
		return time.Time{}, false
	}
	return last.Add(time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second), true
}

// LeaseFresh reports whether lease has not expired at now. The duration comes
// from the Lease itself, as kubelet's node leases, so that agents (and tests)
// choose their own renewal cadence.
func LeaseFresh(lease *coordinationv1.Lease, now time.Time) bool {
	exp, ok := LeaseExpiry(lease)
	return ok && now.Before(exp)
}

// LeaseRevived reports whether an update from old to cur brings a Lease back to
// life: cur is fresh where old had already expired by the time of cur's renewal.
// Controllers use it to react to a returning node without waking up on every
// routine renewal.
func LeaseRevived(old, cur *coordinationv1.Lease) bool {
	curExp, ok := LeaseExpiry(cur)
	if !ok {
		return false
	}
	oldExp, ok := LeaseExpiry(old)
	if !ok {
		return true
	}
	renew := curExp.Add(-time.Duration(*cur.Spec.LeaseDurationSeconds) * time.Second)
	return !renew.Before(oldExp)
}
