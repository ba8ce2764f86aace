// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantcronjob_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/internal/indexer"
	"github.com/kquant/kquant/controllers/quantcronjob"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/testenv"
)

// The tests call Reconcile themselves, with a fake clock, through the
// manager's cached client (the job index) against a real API server; no
// controller runs in the background.
var (
	c   client.Client
	mgr manager.Manager
)

func TestMain(m *testing.M) {
	testenv.Main(m, func(ctx context.Context, env *testenv.Env, m manager.Manager) error {
		c, mgr = env.Client, m
		if err := indexer.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
			return err
		}
		// Informers for the kinds the reconciler reads.
		for _, obj := range []client.Object{&kquantv1alpha1.QuantCronJob{}, &kquantv1alpha1.QuantJob{}, &kquantv1alpha1.GPUNodeProfile{}} {
			if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
				return err
			}
		}
		return nil
	})
}

// fixture is one QuantCronJob and the reconciler that runs it on clock.
type fixture struct {
	t     *testing.T
	clock *clocktesting.FakePassiveClock
	r     *quantcronjob.Reconciler
	key   types.NamespacedName
}

func newFixture(t *testing.T, ns string, spec kquantv1alpha1.QuantCronJobSpec) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	// A generated name: the same test run again (-count) gets a fresh
	// namespace, not "already exists".
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: ns + "-"}}
	if err := c.Create(t.Context(), namespace); err != nil {
		t.Fatal(err)
	}
	ns = namespace.Name
	spec.JobTemplate.Spec = builders.MakeQuantJob("x", ns).Recipe("fp8").EachGPU().MinSNRdB("25").Obj().Spec
	cj := &kquantv1alpha1.QuantCronJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns}, Spec: spec}
	if err := c.Create(t.Context(), cj); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, key: client.ObjectKeyFromObject(cj)}
	f.clock = clocktesting.NewFakePassiveClock(cj.CreationTimestamp.Time)
	f.r = quantcronjob.New(mgr.GetClient(), mgr.GetEventRecorder("test"), f.clock)
	return f
}

// at sets the clock to the cronjob's creation plus d and reconciles once the
// cache has caught up with the API server; it returns the requeue delay.
func (f *fixture) at(d time.Duration) time.Duration {
	f.t.Helper()
	cj := f.get()
	f.clock.SetTime(cj.CreationTimestamp.Add(d))
	f.synced()
	res, err := f.r.Reconcile(f.t.Context(), reconcile.Request{NamespacedName: f.key})
	if err != nil {
		f.t.Fatalf("reconcile at +%s: %v", d, err)
	}
	return res.RequeueAfter
}

func (f *fixture) get() *kquantv1alpha1.QuantCronJob {
	f.t.Helper()
	cj := &kquantv1alpha1.QuantCronJob{}
	if err := c.Get(f.t.Context(), f.key, cj); err != nil {
		f.t.Fatal(err)
	}
	return cj
}

// synced waits until the cache holds the API server's cronjob and jobs.
func (f *fixture) synced() {
	f.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		live, cached := f.versions(c), f.versions(mgr.GetClient())
		a, b := f.get(), &kquantv1alpha1.QuantCronJob{}
		if err := mgr.GetClient().Get(f.t.Context(), f.key, b); err == nil && a.ResourceVersion == b.ResourceVersion && slices.Equal(live, cached) {
			return
		}
	}
	f.t.Fatal("cache did not catch up")
}

// jobs are the names of the cronjob's jobs, as r reads them.
func (f *fixture) jobs(r client.Reader) []string {
	f.t.Helper()
	return f.listed(r, func(j *kquantv1alpha1.QuantJob) string {
		if j.DeletionTimestamp != nil {
			return ""
		}
		return j.Name
	})
}

// versions are the cronjob's jobs as name@resourceVersion, as r reads them:
// equal for the API server and the cache once the cache has every write.
func (f *fixture) versions(r client.Reader) []string {
	f.t.Helper()
	return f.listed(r, func(j *kquantv1alpha1.QuantJob) string { return j.Name + "@" + j.ResourceVersion })
}

// listed lists the namespace's jobs through r and returns key of each, sorted,
// leaving out empty keys.
func (f *fixture) listed(r client.Reader, key func(*kquantv1alpha1.QuantJob) string) []string {
	f.t.Helper()
	list := &kquantv1alpha1.QuantJobList{}
	if err := r.List(f.t.Context(), list, client.InNamespace(f.key.Namespace)); err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for i := range list.Items {
		if k := key(&list.Items[i]); k != "" {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// finishJob marks job finished in phase p.
func (f *fixture) finishJob(name string, p kquantv1alpha1.JobPhase) {
	f.t.Helper()
	job := &kquantv1alpha1.QuantJob{}
	if err := c.Get(f.t.Context(), types.NamespacedName{Namespace: f.key.Namespace, Name: name}, job); err != nil {
		f.t.Fatal(err)
	}
	job.Status.Phase = p
	job.Status.CompletionTime = &metav1.Time{Time: f.clock.Now()}
	if err := c.Status().Update(f.t.Context(), job); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) wantJobs(when string, want ...string) {
	f.t.Helper()
	slices.Sort(want)
	if got := f.jobs(c); !slices.Equal(got, want) {
		f.t.Fatalf("%s: jobs %v, want %v", when, got, want)
	}
}

// name is the job name of the schedule time created+d, truncated to the minute.
func (f *fixture) name(d time.Duration) string {
	return quantcronjob.JobName("nightly", f.get().CreationTimestamp.Add(d).Truncate(time.Minute))
}

func TestScheduleFiresWithForbidAndHistory(t *testing.T) {
	f := newFixture(t, "cron-forbid", kquantv1alpha1.QuantCronJobSpec{
		Schedule: "*/10 * * * *", ConcurrencyPolicy: kquantv1alpha1.ConcurrencyForbid,
		SuccessfulJobsHistoryLimit: ptr.To[int32](1), FailedJobsHistoryLimit: ptr.To[int32](1),
	})
	start := f.get().CreationTimestamp.Time
	first := start.Truncate(10 * time.Minute).Add(10 * time.Minute).Sub(start)

	// Nothing is due before the first time; the requeue points at it.
	if got := f.at(0); got != first {
		t.Fatalf("requeue after %s, want %s", got, first)
	}
	f.wantJobs("before the first time")

	// The first time fires once, however often it is reconciled.
	f.at(first)
	f.at(first + time.Second)
	j1 := f.name(first)
	f.wantJobs("at the first time", j1)
	if got := f.get().Status.Active; !slices.Equal(got, []string{j1}) {
		t.Fatalf("status.active %v, want [%s]", got, j1)
	}

	// Forbid: the second time is skipped while the first job runs...
	f.at(first + 10*time.Minute)
	f.wantJobs("second time, first active", j1)
	// ...and started late once it finished (no deadline).
	f.finishJob(j1, kquantv1alpha1.JobPhaseSucceeded)
	f.at(first + 12*time.Minute)
	j2 := f.name(first + 10*time.Minute)
	f.wantJobs("after the first finished", j1, j2)

	// History: one succeeded job kept, the older deleted.
	f.finishJob(j2, kquantv1alpha1.JobPhaseSucceeded)
	f.at(first + 13*time.Minute)
	f.wantJobs("history limit 1", j2)
	if f.get().Status.LastSuccessfulTime == nil {
		t.Fatal("status.lastSuccessfulTime not set")
	}
}

func TestStartingDeadlineSkipsMissedTimes(t *testing.T) {
	f := newFixture(t, "cron-deadline", kquantv1alpha1.QuantCronJobSpec{
		Schedule: "0 * * * *", StartingDeadlineSeconds: ptr.To[int64](300), ConcurrencyPolicy: kquantv1alpha1.ConcurrencyAllow,
	})
	start := f.get().CreationTimestamp.Time
	first := start.Truncate(time.Hour).Add(time.Hour).Sub(start)

	// The manager was down for three hours: the missed times are older than
	// the deadline, so nothing starts...
	f.at(first + 2*time.Hour + 30*time.Minute)
	f.wantJobs("three missed times, all past the deadline")
	// ...until a time comes within it: only that one runs.
	f.at(first + 3*time.Hour + 2*time.Minute)
	f.wantJobs("within the deadline", f.name(first+3*time.Hour))
}

func TestReplaceDeletesTheActiveJob(t *testing.T) {
	f := newFixture(t, "cron-replace", kquantv1alpha1.QuantCronJobSpec{
		Schedule: "@hourly", ConcurrencyPolicy: kquantv1alpha1.ConcurrencyReplace,
	})
	start := f.get().CreationTimestamp.Time
	first := start.Truncate(time.Hour).Add(time.Hour).Sub(start)
	f.at(first)
	f.at(first + time.Hour)
	f.wantJobs("replaced", f.name(first+time.Hour))
}

func TestDriverChangeCreatesAJobForThatNode(t *testing.T) {
	f := newFixture(t, "cron-driver", kquantv1alpha1.QuantCronJobSpec{
		Triggers: &kquantv1alpha1.Triggers{DriverChange: true},
	})
	ctx := t.Context()
	profiles := []*kquantv1alpha1.GPUNodeProfile{
		builders.MakeGPUNodeProfile("driver-node-a").GPUs(builders.H100, 2).Ready().Obj(),
		builders.MakeGPUNodeProfile("driver-node-b").GPUs(builders.H100, 2).Ready().Obj(),
	}
	for _, p := range profiles {
		if err := testenv.CreateWithStatus(ctx, c, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), p) })
	}
	waitProfiles(t, "580.65.06")

	// The first versions seen are recorded, without a job.
	f.at(time.Minute)
	f.wantJobs("first sight")
	if got := f.get().Status.NodeDrivers; len(got) != 2 {
		t.Fatalf("status.nodeDrivers %v, want both nodes", got)
	}

	// A driver upgrade on node b: one job, restricted to node b.
	p := profiles[1]
	if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	p.Status.DriverVersion, p.Status.CUDADriverVersion = "590.10.01", "13.1"
	if err := c.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitProfiles(t, "580.65.06", "590.10.01")
	f.at(2 * time.Minute)
	f.at(3 * time.Minute)
	want := quantcronjob.DriverJobName("nightly", kquantv1alpha1.NodeDriver{NodeName: "driver-node-b", DriverVersion: "590.10.01", CUDADriverVersion: "13.1"})
	f.wantJobs("after the upgrade", want)
	job := &kquantv1alpha1.QuantJob{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: f.key.Namespace, Name: want}, job); err != nil {
		t.Fatal(err)
	}
	if sel := job.Spec.Placement.NodeSelector; sel == nil || sel.MatchLabels[quantcronjob.HostnameLabel] != "driver-node-b" {
		t.Fatalf("nodeSelector %v, want %s=driver-node-b", sel, quantcronjob.HostnameLabel)
	}
	if job.Spec.Tolerances.MinSNRdB != "25" {
		t.Fatalf("tolerances %+v, want the template's", job.Spec.Tolerances)
	}
}

// waitProfiles waits until the cache's profiles report the driver versions want.
func waitProfiles(t *testing.T, want ...string) {
	t.Helper()
	var got []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		list := &kquantv1alpha1.GPUNodeProfileList{}
		if err := mgr.GetClient().List(t.Context(), list); err != nil {
			t.Fatal(err)
		}
		got = nil
		for _, p := range list.Items {
			got = append(got, p.Status.DriverVersion)
		}
		slices.Sort(got)
		got = slices.Compact(got)
		if slices.Equal(got, want) {
			return
		}
	}
	t.Fatalf("profiles' drivers %v, want %v", got, want)
}
