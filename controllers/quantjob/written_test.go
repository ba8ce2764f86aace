// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantjob

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

func TestWrittenIsUsedUntilTheCacheCatchesUp(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "job"}
	var w written
	if _, _, ok := w.newerThanCache(key, "uid-1", "10"); ok {
		t.Fatal("nothing written: the cache is all there is")
	}
	// Versions are opaque: none of these is compared as a number.
	st := &kquantv1alpha1.QuantJobStatus{Phase: kquantv1alpha1.JobPhasePending, Total: 1}
	w.record(key, "uid-1", "a", "c", st)
	if v, got, ok := w.newerThanCache(key, "uid-1", "a"); !ok || v != "c" || got != st {
		t.Fatalf("cache at the version written on: got %q %v %v, want the write", v, got, ok)
	}
	if _, _, ok := w.newerThanCache(key, "uid-2", "a"); ok {
		t.Fatal("another job of the same name must not see the record")
	}
	if _, _, ok := w.newerThanCache(key, "uid-1", "a"); ok {
		t.Fatal("the record of a replaced job is forgotten")
	}
	w.record(key, "uid-1", "a", "c", st)
	if _, _, ok := w.newerThanCache(key, "uid-1", "c"); ok {
		t.Fatal("the cache showing the write's version has caught up")
	}
	w.record(key, "uid-1", "a", "c", st)
	if _, _, ok := w.newerThanCache(key, "uid-1", "b"); ok {
		t.Fatal("a cache at a version the memo does not know has moved on")
	}
	w.record(key, "uid-1", "a", "c", st)
	w.forget(key)
	if _, _, ok := w.newerThanCache(key, "uid-1", "a"); ok {
		t.Fatal("forgotten after a conflict")
	}
}

func TestWrittenChainsWritesMadeOnTheMemo(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "job"}
	var w written
	first := &kquantv1alpha1.QuantJobStatus{Total: 1}
	second := &kquantv1alpha1.QuantJobStatus{Total: 1, Succeeded: 1}
	w.record(key, "uid-1", "x", "y", first)
	// The cache is still at x: the next write builds on the memo, at y.
	w.record(key, "uid-1", "y", "z", second)
	for _, cached := range []string{"x", "y"} {
		if v, got, ok := w.newerThanCache(key, "uid-1", cached); !ok || v != "z" || got != second {
			t.Errorf("cache at %s, behind both writes: got %q %v %v, want the second write", cached, v, got, ok)
		}
	}
	if _, _, ok := w.newerThanCache(key, "uid-1", "z"); ok {
		t.Error("the cache at the last write has caught up")
	}
}

func TestCreationsUntilSeen(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "j"}
	c := newCreations()
	if c.unseen(key, nil, now) {
		t.Fatal("nothing created: nothing to wait for")
	}
	c.created(key, "j-0-0", now)
	c.created(key, "j-1-0", now)
	if !c.unseen(key, nil, now) {
		t.Fatal("created runs missing from the cache must be waited for")
	}
	if !c.unseen(key, []kquantv1alpha1.QuantRun{run(0, 0, nil)}, now) {
		t.Fatal("one of two created runs seen: still waiting")
	}
	if c.unseen(key, []kquantv1alpha1.QuantRun{run(1, 0, nil)}, now) {
		t.Fatal("both runs seen")
	}
	c.created(key, "j-2-0", now)
	if c.unseen(key, nil, now.Add(createExpiry+time.Second)) {
		t.Fatal("an expectation expires")
	}
	c.created(key, "j-2-0", now)
	c.forget(key)
	if c.unseen(key, nil, now) {
		t.Fatal("forgotten with its job")
	}
}
