// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package idlevalidation_test

import (
	"context"

	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/idlevalidation"
	"github.com/kquant/kquant/controllers/internal/fleet"
	"github.com/kquant/kquant/controllers/internal/indexer"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/testenv"
)

// managerNS is the manager's own namespace, where validation jobs go.
const managerNS = "kquant-system"

// The tests call Reconcile themselves, with a fake clock, through the
// manager's cached client (the indexes) against a real API server; no
// controller runs in the background.
var (
	c   client.Client
	mgr manager.Manager
)

func TestMain(m *testing.M) {
	testenv.Main(m, func(ctx context.Context, env *testenv.Env, m manager.Manager) error {
		c, mgr = env.Client, m
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: managerNS}}); err != nil {
			return err
		}
		if err := c.Create(ctx, builders.MakeQuantRecipe("fp8-current-scaling", "").Scheme(kquantv1alpha1.SchemeFloat8CurrentScaling).ClusterObj()); err != nil {
			return err
		}
		if err := indexer.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
			return err
		}
		for _, obj := range []client.Object{&kquantv1alpha1.QuantGatePolicy{}, &kquantv1alpha1.QuantJob{}, &kquantv1alpha1.ClusterQuantRecipe{},
			&kquantv1alpha1.GPUNodeProfile{}, fleet.NodeMetadata()} {
			if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
				return err
			}
		}
		return nil
	})
}

// fixture is one policy, the nodes of a test, and the reconciler on a fake clock.
type fixture struct {
	t      *testing.T
	clock  *clocktesting.FakePassiveClock
	r      *idlevalidation.Reconciler
	policy string
}

func newFixture(t *testing.T, p *kquantv1alpha1.QuantGatePolicy) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	if err := c.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, policy: p.Name, clock: clocktesting.NewFakePassiveClock(p.CreationTimestamp.Time)}
	f.r = idlevalidation.New(mgr.GetClient(), mgr.GetEventRecorder("test"), f.clock, managerNS)
	return f
}

// node creates a Node with its hostname label and its agent's profile.
func (f *fixture) node(profile *kquantv1alpha1.GPUNodeProfile) {
	f.t.Helper()
	node := builders.MakeNode(profile.Name).Label(corev1.LabelHostname, profile.Name).Obj()
	if err := c.Create(f.t.Context(), node); err != nil {
		f.t.Fatal(err)
	}
	if err := testenv.CreateWithStatus(f.t.Context(), c, profile); err != nil {
		f.t.Fatal(err)
	}
}

// free writes that every GPU of node has been free since t.
func (f *fixture) free(node string, t time.Time) {
	f.t.Helper()
	p := &kquantv1alpha1.GPUNodeProfile{}
	if err := c.Get(f.t.Context(), types.NamespacedName{Name: node}, p); err != nil {
		f.t.Fatal(err)
	}
	w := builders.GPUNodeProfileWrapper{GPUNodeProfile: *p}
	w.FreeSince(t)
	if err := c.Status().Update(f.t.Context(), &w.GPUNodeProfile); err != nil {
		f.t.Fatal(err)
	}
}

// at sets the clock to t and reconciles once the cache has caught up; it
// returns the requeue delay.
func (f *fixture) at(t time.Time) time.Duration {
	f.t.Helper()
	f.clock.SetTime(t)
	f.synced()
	res, err := f.r.Reconcile(f.t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Name: f.policy}})
	if err != nil {
		f.t.Fatalf("reconcile at %s: %v", t, err)
	}
	return res.RequeueAfter
}

// jobs are the policy's idle validation jobs from reader, by name.
func (f *fixture) jobs(reader client.Reader) map[string]*kquantv1alpha1.QuantJob {
	f.t.Helper()
	list := &kquantv1alpha1.QuantJobList{}
	if err := reader.List(f.t.Context(), list, client.InNamespace(managerNS),
		client.MatchingLabels{kquantv1alpha1.LabelGatePolicy: f.policy}); err != nil {
		f.t.Fatal(err)
	}
	out := map[string]*kquantv1alpha1.QuantJob{}
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp.IsZero() {
			out[list.Items[i].Name] = &list.Items[i]
		}
	}
	return out
}

// idleJobs are the names of the policy's idle validation jobs, sorted.
func (f *fixture) idleJobs() []string {
	var out []string
	for name, j := range f.jobs(c) {
		if kquantv1alpha1.IsIdleValidation(j) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// synced waits until the cache holds the API server's jobs and profiles.
func (f *fixture) synced() {
	f.t.Helper()
	versions := func(reader client.Reader) []string {
		var out []string
		for name, j := range f.jobs(reader) {
			out = append(out, name+"@"+j.ResourceVersion)
		}
		profiles := &kquantv1alpha1.GPUNodeProfileList{}
		if err := reader.List(f.t.Context(), profiles); err != nil {
			f.t.Fatal(err)
		}
		for _, p := range profiles.Items {
			out = append(out, p.Name+"@"+p.ResourceVersion)
		}
		slices.Sort(out)
		return out
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if slices.Equal(versions(c), versions(mgr.GetClient())) {
			return
		}
	}
	f.t.Fatal("cache did not catch up")
}

// finish marks job finished.
func (f *fixture) finish(name string) {
	f.t.Helper()
	j := &kquantv1alpha1.QuantJob{}
	if err := c.Get(f.t.Context(), types.NamespacedName{Namespace: managerNS, Name: name}, j); err != nil {
		f.t.Fatal(err)
	}
	j.Status.Phase, j.Status.CompletionTime = kquantv1alpha1.JobPhaseSucceeded, &metav1.Time{Time: f.clock.Now()}
	if err := c.Status().Update(f.t.Context(), j); err != nil {
		f.t.Fatal(err)
	}
}

// TestIdleNodesAreValidated follows three nodes under a policy that
// validates nodes idle for 30m at most hourly: one idle, one with a GPU held
// by a pod, one whose agent does not read the kubelet's allocations.
func TestIdleNodesAreValidated(t *testing.T) {
	const idleFor, interval = 30 * time.Minute, time.Hour
	f := newFixture(t, builders.MakeQuantGatePolicy("idle", "fp8-current-scaling").IdleValidation(idleFor, interval).Obj())
	t0 := f.clock.Now()
	f.node(builders.MakeGPUNodeProfile("idle-a").GPUs(builders.H100, 2).FreeSince(t0).Ready().Obj())
	f.node(builders.MakeGPUNodeProfile("idle-busy").GPUs(builders.H100, 2).FreeSince(t0).HeldBy(1, "team", "train").Ready().Obj())
	f.node(builders.MakeGPUNodeProfile("idle-unread").GPUs(builders.H100, 2).Ready().Obj())

	// Idle too briefly: nothing yet, and a wake-up when idleFor is reached.
	if got := f.at(t0.Add(10 * time.Minute)); got != 20*time.Minute {
		t.Errorf("requeue after %s, want 20m (when idle-a has been idle for idleFor)", got)
	}
	if got := f.idleJobs(); len(got) != 0 {
		t.Errorf("idle jobs %v before any node was idle for idleFor", got)
	}

	// idleFor reached: one job, for the idle node alone.
	f.at(t0.Add(idleFor))
	first := idlevalidation.JobName("idle", "idle-a", 0)
	if got := f.idleJobs(); !slices.Equal(got, []string{first}) {
		t.Fatalf("idle jobs %v, want only %s", got, first)
	}
	job := f.jobs(c)[first]
	p := &kquantv1alpha1.QuantGatePolicy{}
	if err := c.Get(t.Context(), types.NamespacedName{Name: "idle"}, p); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(job, p) || job.Annotations[kquantv1alpha1.AnnotationIdleNode] != "idle-a" ||
		job.Spec.Placement.NodeSelector == nil || job.Spec.Placement.NodeSelector.MatchLabels[corev1.LabelHostname] != "idle-a" ||
		job.Spec.DisruptionLimit == nil || *job.Spec.DisruptionLimit != 0 ||
		job.Spec.TTLSecondsAfterFinished == nil || *job.Spec.TTLSecondsAfterFinished != int32(interval/time.Second) ||
		job.Spec.Mode != kquantv1alpha1.JobModeValidation || job.Spec.RecipeRef.Name != "fp8-current-scaling" {
		t.Errorf("idle job %s: owners %+v annotations %v spec %+v", first, job.OwnerReferences, job.Annotations, job.Spec)
	}

	// In flight: no second job, whatever the time.
	f.at(t0.Add(3 * interval))
	if got := f.idleJobs(); !slices.Equal(got, []string{first}) {
		t.Errorf("idle jobs %v while the first runs, want only it", got)
	}

	// Finished, and the node idle again since (its run pods held the GPUs):
	// the next waits for the interval from the first job's start.
	f.finish(first)
	start := job.CreationTimestamp.Time
	f.free("idle-a", start.Add(5*time.Minute))
	if got := f.at(start.Add(50 * time.Minute)); got != 10*time.Minute {
		t.Errorf("requeue after %s, want 10m (the rest of the interval)", got)
	}
	if got := f.idleJobs(); !slices.Equal(got, []string{first}) {
		t.Errorf("idle jobs %v within the interval, want only the first", got)
	}
	f.at(start.Add(interval))
	second := idlevalidation.JobName("idle", "idle-a", idlevalidation.Window(p.CreationTimestamp.Time, start.Add(interval), interval))
	if got := f.idleJobs(); !slices.Equal(got, slices.Sorted(slices.Values([]string{first, second}))) {
		t.Errorf("idle jobs %v after the interval, want %s and %s", got, first, second)
	}

	// The busy node's pod leaves: it is validated idleFor later. idle-a
	// keeps only its newest job: the first, finished, is gone.
	f.free("idle-busy", start.Add(interval))
	f.at(start.Add(interval + idleFor))
	busy := idlevalidation.JobName("idle", "idle-busy", idlevalidation.Window(p.CreationTimestamp.Time, start.Add(interval+idleFor), interval))
	want := []string{second, busy}
	slices.Sort(want)
	if got := f.idleJobs(); !slices.Equal(got, want) {
		t.Errorf("idle jobs %v, want %v", got, want)
	}

	// Without idleValidation, the policy's idle jobs go.
	if err := c.Get(t.Context(), types.NamespacedName{Name: "idle"}, p); err != nil {
		t.Fatal(err)
	}
	p.Spec.IdleValidation = nil
	if err := c.Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		cached := &kquantv1alpha1.QuantGatePolicy{}
		if err := mgr.GetClient().Get(t.Context(), types.NamespacedName{Name: "idle"}, cached); err == nil && cached.Spec.IdleValidation == nil {
			break
		}
	}
	f.at(start.Add(2 * interval))
	if got := f.idleJobs(); len(got) != 0 {
		t.Errorf("idle jobs %v after idleValidation was removed, want none", got)
	}
}
