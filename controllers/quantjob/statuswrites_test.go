// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantjob_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/fakeagent"
	"github.com/kquant/kquant/test/testenv"
)

// statusPatch matches a write of a QuantJob's status subresource.
var statusPatch = regexp.MustCompile(`^/apis/kquant\.dev/v1alpha1/namespaces/[^/]+/quantjobs/([^/]+)/status$`)

// statusWrites counts the manager's PATCHes of quantjobs/status per job and
// those the API server refused with a conflict, and keeps the statuses it
// stored, in order (one job's reconciles never overlap).
type statusWrites struct {
	next http.RoundTripper

	mu        sync.Mutex
	perJob    map[string]int
	conflicts int
	history   map[string][]kquantv1alpha1.QuantJobStatus
}

func (c *statusWrites) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if req.Method != http.MethodPatch {
		return resp, err
	}
	if m := statusPatch.FindStringSubmatch(req.URL.Path); m != nil {
		c.mu.Lock()
		c.perJob[m[1]]++
		if err == nil && resp.StatusCode == http.StatusConflict {
			c.conflicts++
		}
		if err == nil && resp.StatusCode == http.StatusOK {
			body, readErr := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(body))
			job := &kquantv1alpha1.QuantJob{}
			if readErr == nil && json.Unmarshal(body, job) == nil {
				c.history[m[1]] = append(c.history[m[1]], job.Status)
			}
		}
		c.mu.Unlock()
	}
	return resp, err
}

// A burst of one-run jobs, reconciled by many workers from a cache that lags
// their writes, costs each job at most one status write per change it goes
// through (expanded, bound, running, succeeded), none of them refused as a
// conflict, and no job's status goes backwards. The numbers of writes, not
// their timing, are asserted.
func TestBurstOfSmallJobsWritesEachStatusOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	const (
		jobs           = 40
		leaseNamespace = "kquant-system"
		// A one-run job's status changes at most four times: expanded
		// (Pending, 1 run), bound, running, succeeded.
		maxWritesPerJob = 4
	)
	env := testenv.ForTest(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace}}); err != nil {
		t.Fatal(err)
	}

	writes := &statusWrites{perJob: map[string]int{}, history: map[string][]kquantv1alpha1.QuantJobStatus{}}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { writes.next = rt; return writes })
	mgr, err := ctrl.NewManager(cfg, manager.Options{
		Scheme:                 env.Scheme,
		Cache:                  controllers.CacheOptions(leaseNamespace),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Many workers, as in the scale test's 64-worker run where stale
		// reads made jobs write their status 6.6 times each.
		Controller: config.Controller{SkipNameValidation: new(true), MaxConcurrentReconciles: 64},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := controllers.SetupControllers(ctx, mgr, controllers.Options{LeaseNamespace: leaseNamespace, Registerer: prometheus.NewRegistry()}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("manager cache did not sync")
	}

	for i := range 4 {
		a := fakeagent.New(env.Client, builders.MakeGPUNodeProfile(fmt.Sprintf("burst-%d", i)).GPUs(builders.H100, 8).Ready().Obj(),
			leaseNamespace, fakeagent.WithRunDuration(50*time.Millisecond),
			// Long Leases: a loaded test machine must not lose nodes
			// (a retried run is more changes, hence more writes).
			fakeagent.WithLeaseDuration(time.Minute))
		if err := a.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(a.Stop)
	}
	ns, err := env.CreateNamespace(ctx, "burst")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, builders.MakeQuantRecipe("fp8", ns).Obj()); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	for i := range jobs {
		wg.Go(func() {
			if err := env.Client.Create(ctx, builders.MakeQuantJob(fmt.Sprintf("small-%02d", i), ns).Recipe("fp8").AnyGPU().Obj()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()

	deadline := time.Now().Add(60 * time.Second)
	for {
		list := &kquantv1alpha1.QuantJobList{}
		if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, j := range list.Items {
			if j.Status.Phase == kquantv1alpha1.JobPhaseSucceeded {
				n++
			}
		}
		if n == jobs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs succeeded within 60 s", n, jobs)
		}
		time.Sleep(100 * time.Millisecond)
	}

	writes.mu.Lock()
	defer writes.mu.Unlock()
	if writes.conflicts > 0 {
		t.Errorf("%d status writes were refused as conflicts: written on a stale version", writes.conflicts)
	}
	total := 0
	for name, n := range writes.perJob {
		total += n
		if n > maxWritesPerJob {
			t.Errorf("job %s: %d status writes, want at most %d", name, n, maxWritesPerJob)
		}
	}
	t.Logf("%d status writes for %d one-run jobs (%.2f per job)", total, jobs, float64(total)/jobs)
	for name, statuses := range writes.history {
		rank := map[kquantv1alpha1.JobPhase]int{"": 0, kquantv1alpha1.JobPhasePending: 1, kquantv1alpha1.JobPhaseRunning: 2, kquantv1alpha1.JobPhaseSucceeded: 3}
		for i := 1; i < len(statuses); i++ {
			prev, cur := statuses[i-1], statuses[i]
			retried := cur.Failed > prev.Failed // a retry waits again: Running -> Pending is progress
			if cur.Succeeded < prev.Succeeded || cur.Total < prev.Total || cur.Failed < prev.Failed || !retried && rank[cur.Phase] < rank[prev.Phase] {
				t.Errorf("job %s went backwards: %s %d/%d (%d failed) then %s %d/%d (%d failed)", name,
					prev.Phase, prev.Succeeded, prev.Total, prev.Failed, cur.Phase, cur.Succeeded, cur.Total, cur.Failed)
			}
		}
	}

	// One Completed event per job: a transition is announced once.
	deadline = time.Now().Add(10 * time.Second)
	for {
		list := &eventsv1.EventList{}
		if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		completed := map[string]int{}
		for _, e := range list.Items {
			if e.Reason == "Completed" && e.Regarding.Kind == "QuantJob" {
				n := 1
				if e.Series != nil {
					n = int(e.Series.Count)
				}
				completed[e.Regarding.Name] += n
			}
		}
		dup := ""
		for name, n := range completed {
			if n > 1 {
				dup = fmt.Sprintf("job %s: %d Completed events", name, n)
			}
		}
		if dup != "" {
			t.Fatal(dup)
		}
		if len(completed) == jobs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs have their Completed event", len(completed), jobs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
