// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package idlevalidation

import (
	"fmt"
	"hash/fnv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// Node is what Decide needs to know of one node.
type Node struct {
	// IdleSince is when the last of its GPUs became free; zero while any
	// GPU is held or its idle time is unknown (see IdleSince).
	IdleSince time.Time
	// LastStart is when its newest idle validation job was created; zero
	// when it has none.
	LastStart time.Time
	// Active is true while that job has not finished.
	Active bool
}

// Decide reports whether a node is due for an idle validation at now, and
// otherwise when it will be (zero when only an event can make it due: the
// end of its job, or a GPU becoming free).
func Decide(n Node, now time.Time, idleFor, interval time.Duration) (due bool, next time.Time) {
	if n.Active || n.IdleSince.IsZero() {
		return false, time.Time{}
	}
	next = n.IdleSince.Add(idleFor)
	if !n.LastStart.IsZero() {
		if allowed := n.LastStart.Add(interval); allowed.After(next) {
			next = allowed
		}
	}
	if now.Before(next) {
		return false, next
	}
	return true, time.Time{}
}

// IdleSince is when the last GPU of profile became free: zero when the
// profile has no GPU, a GPU has no freeSince (held, or the allocations are
// not read), or the node cannot take runs (its agent is not Ready, or its
// driver is being upgraded).
func IdleSince(profile *kquantv1alpha1.GPUNodeProfile) time.Time {
	st := &profile.Status
	if len(st.GPUs) == 0 || !meta.IsStatusConditionTrue(st.Conditions, kquantv1alpha1.ConditionReady) ||
		meta.IsStatusConditionTrue(st.Conditions, kquantv1alpha1.ConditionDriverUpgrade) {
		return time.Time{}
	}
	var since time.Time
	for _, g := range st.GPUs {
		if g.FreeSince == nil {
			return time.Time{}
		}
		if g.FreeSince.After(since) {
			since = g.FreeSince.Time
		}
	}
	return since
}

// Window is the index of the interval that now falls in, counted from the
// policy's creation: consecutive idle jobs of a node are at least interval
// apart, so each falls in a window of its own.
func Window(created, now time.Time, interval time.Duration) int64 {
	if interval <= 0 || !now.After(created) {
		return 0
	}
	return int64(now.Sub(created) / interval)
}

// JobName is the name of policy's idle validation job of node in window:
// the node by a hash, since a Node's name may be as long as a job's.
func JobName(policy, node string, window int64) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(node))
	return fmt.Sprintf("%s-idle-%08x-%d", policy, h.Sum32(), window)
}
