// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/fakeagent"
)

// timeout bounds every wait of the suite. It is a liveness bound, not a
// speed check: under -race on a loaded 2-core CI machine, two EachGPU jobs of
// 24 runs of 300 ms each took longer than 20 s, so it is generous.
const timeout = 60 * time.Second

// eventually polls cond every 50 ms until it reports done, failing the test
// with cond's last word after timeout.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s; last: %s", timeout, what, last)
}

// newNamespace creates the test's namespace and, at cleanup, deletes its jobs
// (the controller deletes their runs: there is no namespace controller here).
func newNamespace(t *testing.T) string {
	t.Helper()
	ns, err := s.env.CreateNamespace(t.Context(), "t")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = s.client.DeleteAllOf(ctx, &kquantv1alpha1.QuantJob{}, client.InNamespace(ns))
		_ = s.client.DeleteAllOf(ctx, &kquantv1alpha1.QuantRecipe{}, client.InNamespace(ns))
	})
	return ns
}

// startAgents starts a fake agent per profile and, at cleanup, deletes them and
// waits until the fleet is gone, so that the next test starts from no nodes.
func startAgents(t *testing.T, agents ...*fakeagent.Agent) {
	t.Helper()
	for _, a := range agents {
		if err := a.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		ctx := context.Background()
		for _, a := range agents {
			if err := a.Delete(ctx); err != nil {
				t.Errorf("deleting agent %s: %v", a.Node(), err)
			}
		}
		for _, a := range agents {
			waitGone(t, &kquantv1alpha1.GPUNodeProfile{ObjectMeta: metav1.ObjectMeta{Name: a.Node()}})
		}
	})
}

// agent is a fake agent with count GPUs of product on node name.
func agent(name string, product builders.Product, count int, opts ...fakeagent.Option) *fakeagent.Agent {
	return fakeagent.New(s.client, builders.MakeGPUNodeProfile(name).GPUs(product, count).Ready().Obj(), leaseNamespace, opts...)
}

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := s.client.Create(t.Context(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

func getJob(t *testing.T, ns, name string) *kquantv1alpha1.QuantJob {
	t.Helper()
	job := &kquantv1alpha1.QuantJob{}
	if err := s.client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, job); err != nil {
		t.Fatalf("getting job %s: %v", name, err)
	}
	return job
}

// runsOf lists a job's runs straight from the API server.
func runsOf(t *testing.T, ns, job string) []kquantv1alpha1.QuantRun {
	t.Helper()
	list := &kquantv1alpha1.QuantRunList{}
	if err := s.client.List(t.Context(), list, client.InNamespace(ns), client.MatchingLabels{kquantv1alpha1.LabelJob: job}); err != nil {
		t.Fatalf("listing runs of %s: %v", job, err)
	}
	return list.Items
}

// waitForPhase waits until the job reaches phase.
func waitForPhase(t *testing.T, ns, name string, phase kquantv1alpha1.JobPhase) *kquantv1alpha1.QuantJob {
	t.Helper()
	var job *kquantv1alpha1.QuantJob
	eventually(t, fmt.Sprintf("job %s to be %s", name, phase), func() (bool, string) {
		job = getJob(t, ns, name)
		return job.Status.Phase == phase, fmt.Sprintf("phase %q progress %q conditions %v", job.Status.Phase, job.Status.Progress, job.Status.Conditions)
	})
	return job
}

func condition(conds []metav1.Condition, t string) metav1.Condition {
	if c := meta.FindStatusCondition(conds, t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func waitGone(t *testing.T, obj client.Object) {
	t.Helper()
	eventually(t, fmt.Sprintf("%T %s to be deleted", obj, obj.GetName()), func() (bool, string) {
		// Not t.Context(): cleanups wait too, after it is canceled.
		err := s.client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		return apierrors.IsNotFound(err), fmt.Sprintf("get: %v", err)
	})
}
