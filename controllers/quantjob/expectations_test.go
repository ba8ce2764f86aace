package quantjob

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestExpansions(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "job"}
	var e expansions
	if !e.pending(key, "uid-1", 0) {
		t.Error("a job with total 0 and no record needs expanding")
	}
	if e.pending(key, "uid-1", 3) {
		t.Error("a job with a total needs no expanding")
	}
	e.done(key, "uid-1")
	if e.pending(key, "uid-1", 0) {
		t.Error("a stale cache (total 0) of a job this process expanded must not expand it again")
	}
	if e.pending(key, "uid-2", 0) != true {
		t.Error("a new job of the same name needs expanding")
	}
	e.done(key, "uid-1")
	if e.pending(key, "uid-1", 3) {
		t.Error("total 3: nothing to expand")
	}
	// The cache caught up: the record is gone, a later total 0 would expand.
	if !e.pending(key, "uid-1", 0) {
		t.Error("the record outlived the cache catching up")
	}
	e.done(key, "uid-1")
	e.forget(key)
	if !e.pending(key, "uid-1", 0) {
		t.Error("forget left the record")
	}
}
