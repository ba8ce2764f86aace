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
	st := &kquantv1alpha1.QuantJobStatus{Phase: kquantv1alpha1.JobPhasePending, Total: 1}
	w.record(key, "uid-1", "12", st)
	if v, got, ok := w.newerThanCache(key, "uid-1", "11"); !ok || v != "12" || got != st {
		t.Fatalf("cache at 11 behind the write at 12: got %q %v %v", v, got, ok)
	}
	if _, _, ok := w.newerThanCache(key, "uid-2", "11"); ok {
		t.Fatal("another job of the same name must not see the record")
	}
	if _, _, ok := w.newerThanCache(key, "uid-1", "11"); ok {
		t.Fatal("the record of a replaced job is forgotten")
	}
	w.record(key, "uid-1", "12", st)
	if _, _, ok := w.newerThanCache(key, "uid-1", "12"); ok {
		t.Fatal("the cache showing the write's version has caught up")
	}
	w.record(key, "uid-1", "12", st)
	if _, _, ok := w.newerThanCache(key, "uid-1", "15"); ok {
		t.Fatal("a cache newer than the write has caught up")
	}
	w.record(key, "uid-1", "12", st)
	w.forget(key)
	if _, _, ok := w.newerThanCache(key, "uid-1", "11"); ok {
		t.Fatal("forgotten after a conflict")
	}
}

func TestOlderVersion(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{{"9", "10", true}, {"10", "10", false}, {"11", "10", false}, {"x", "y", true}, {"x", "x", false}} {
		if got := olderVersion(c.a, c.b); got != c.want {
			t.Errorf("olderVersion(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestCreationsUntilSeen(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "j"}
	var c creations
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
