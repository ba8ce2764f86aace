// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"context"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kquantscheme "github.com/kquant/kquant/api/scheme"
	"github.com/kquant/kquant/api/v1alpha1"
)

// verbCounter counts the requests a client makes, by verb.
type verbCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (v *verbCounter) add(verb string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.n[verb]++
}

func (v *verbCounter) take() map[string]int {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := v.n
	v.n = map[string]int{}
	return out
}

func countingClient(t *testing.T) (client.Client, *verbCounter) {
	t.Helper()
	s, err := kquantscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	vc := &verbCounter{n: map[string]int{}}
	c := fake.NewClientBuilder().WithScheme(s).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			vc.add("get")
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			vc.add("create")
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			vc.add("update")
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			vc.add("patch")
			return c.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			vc.add("apply")
			return c.Apply(ctx, obj, opts...)
		},
	}).Build()
	return c, vc
}

func TestLeaseKeeperRenewsByUpdate(t *testing.T) {
	ctx := context.Background()
	c, calls := countingClient(t)
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC))
	keeper := NewLeaseKeeper(c, clk, "kquant-system", "node-a", "agent-1", 0, 0)
	key := client.ObjectKey{Namespace: "kquant-system", Name: v1alpha1.AgentLeaseName("node-a")}
	read := func() *coordinationv1.Lease {
		t.Helper()
		l := &coordinationv1.Lease{}
		if err := c.Get(ctx, key, l); err != nil {
			t.Fatal(err)
		}
		calls.take()
		return l
	}
	renew := func(want map[string]int) {
		t.Helper()
		if err := keeper.Renew(ctx); err != nil {
			t.Fatalf("Renew: %v", err)
		}
		if got := calls.take(); !equalCounts(got, want) {
			t.Errorf("requests %v, want %v", got, want)
		}
		l := read()
		if ptr.Deref(l.Spec.HolderIdentity, "") != "agent-1" || ptr.Deref(l.Spec.LeaseDurationSeconds, 0) != 40 ||
			l.Spec.RenewTime == nil || !l.Spec.RenewTime.Time.Equal(clk.Now()) || l.Labels[v1alpha1.LabelNode] != "node-a" {
			t.Errorf("lease after renewal: labels %v spec %+v, want holder agent-1, 40 s, renewed at %s", l.Labels, l.Spec, clk.Now())
		}
	}

	// The first renewal finds no Lease and creates it, renewed.
	renew(map[string]int{"get": 1, "create": 1})
	// Every later renewal is one Update of the copy the keeper holds.
	for range 3 {
		clk.Step(10 * time.Second)
		renew(map[string]int{"update": 1})
	}

	// Someone else wrote the Lease (an older process of this agent, an
	// administrator): the held copy conflicts, the keeper reads and renews.
	other := read()
	other.Spec.HolderIdentity = ptr.To("agent-0")
	if err := c.Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	calls.take()
	clk.Step(10 * time.Second)
	renew(map[string]int{"update": 2, "get": 1})

	// The Lease was deleted: the keeper creates it again.
	if err := c.Delete(ctx, read()); err != nil {
		t.Fatal(err)
	}
	calls.take()
	clk.Step(10 * time.Second)
	renew(map[string]int{"update": 1, "get": 1, "create": 1})
	clk.Step(10 * time.Second)
	renew(map[string]int{"update": 1})
}

// A Lease created by an older agent (server-side apply) is taken over by a
// read and then renewed by Update.
func TestLeaseKeeperAdoptsExistingLease(t *testing.T) {
	ctx := context.Background()
	c, calls := countingClient(t)
	old := &coordinationv1.Lease{}
	old.Name, old.Namespace = v1alpha1.AgentLeaseName("node-a"), "kquant-system"
	old.Spec.HolderIdentity = ptr.To("agent-old")
	if err := c.Create(ctx, old); err != nil {
		t.Fatal(err)
	}
	calls.take()
	keeper := NewLeaseKeeper(c, clock.RealClock{}, "kquant-system", "node-a", "agent-new", time.Second, 4*time.Second)
	for i, want := range []map[string]int{{"get": 1, "update": 1}, {"update": 1}} {
		if err := keeper.Renew(ctx); err != nil {
			t.Fatalf("renewal %d: %v", i, err)
		}
		if got := calls.take(); !equalCounts(got, want) {
			t.Errorf("renewal %d: requests %v, want %v", i, got, want)
		}
	}
	got := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(old), got); err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(got.Spec.HolderIdentity, "") != "agent-new" || ptr.Deref(got.Spec.LeaseDurationSeconds, 0) != 4 {
		t.Errorf("lease spec %+v, want holder agent-new for 4 s", got.Spec)
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
