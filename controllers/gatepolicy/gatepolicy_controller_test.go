// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gatepolicy_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/gatepolicy"
	"github.com/kquant/kquant/controllers/internal/indexer"
	domaingatepolicy "github.com/kquant/kquant/domain/gatepolicy"
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
		for _, obj := range []client.Object{&kquantv1alpha1.QuantGatePolicy{}, &kquantv1alpha1.QuantJob{}, &kquantv1alpha1.ClusterQuantRecipe{}} {
			if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
				return err
			}
		}
		return nil
	})
}

// fixture is one policy and the reconciler that runs it on clock.
type fixture struct {
	t     *testing.T
	clock *clocktesting.FakePassiveClock
	r     *gatepolicy.Reconciler
	name  string
}

func newFixture(t *testing.T, p *kquantv1alpha1.QuantGatePolicy) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	if err := c.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, name: p.Name, clock: clocktesting.NewFakePassiveClock(p.CreationTimestamp.Time)}
	f.r = gatepolicy.New(mgr.GetClient(), mgr.GetEventRecorder("test"), f.clock, managerNS)
	return f
}

// at sets the clock to the policy's creation plus d and reconciles once the
// cache has caught up with the API server; it returns the requeue delay.
func (f *fixture) at(d time.Duration) time.Duration {
	f.t.Helper()
	f.clock.SetTime(f.get().CreationTimestamp.Add(d))
	f.synced()
	res, err := f.r.Reconcile(f.t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Name: f.name}})
	if err != nil {
		f.t.Fatalf("reconcile at +%s: %v", d, err)
	}
	return res.RequeueAfter
}

func (f *fixture) get() *kquantv1alpha1.QuantGatePolicy {
	f.t.Helper()
	p := &kquantv1alpha1.QuantGatePolicy{}
	if err := c.Get(f.t.Context(), types.NamespacedName{Name: f.name}, p); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// jobs are the names of the policy's jobs (by label), from reader.
func (f *fixture) jobs(reader client.Reader) []string {
	f.t.Helper()
	list := &kquantv1alpha1.QuantJobList{}
	if err := reader.List(f.t.Context(), list, client.InNamespace(managerNS), client.MatchingLabels{kquantv1alpha1.LabelGatePolicy: f.name}); err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, j := range list.Items {
		if j.DeletionTimestamp.IsZero() {
			out = append(out, j.Name+"@"+j.ResourceVersion)
		}
	}
	slices.Sort(out)
	return out
}

// names are jobs without their versions.
func names(jobs []string) []string {
	out := make([]string, 0, len(jobs))
	for _, j := range jobs {
		name, _, _ := strings.Cut(j, "@")
		out = append(out, name)
	}
	return out
}

// synced waits until the cache holds the API server's policy and jobs.
func (f *fixture) synced() {
	f.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		cached := &kquantv1alpha1.QuantGatePolicy{}
		if err := mgr.GetClient().Get(f.t.Context(), types.NamespacedName{Name: f.name}, cached); err == nil &&
			cached.ResourceVersion == f.get().ResourceVersion && slices.Equal(f.jobs(c), f.jobs(mgr.GetClient())) {
			return
		}
	}
	f.t.Fatal("cache did not catch up")
}

// finishJob marks job finished with phase at the clock's time.
func (f *fixture) finishJob(name string, phase kquantv1alpha1.JobPhase) {
	f.t.Helper()
	j := &kquantv1alpha1.QuantJob{}
	if err := c.Get(f.t.Context(), types.NamespacedName{Namespace: managerNS, Name: name}, j); err != nil {
		f.t.Fatal(err)
	}
	j.Status.Phase, j.Status.CompletionTime = phase, &metav1.Time{Time: f.clock.Now()}
	if err := c.Status().Update(f.t.Context(), j); err != nil {
		f.t.Fatal(err)
	}
}

func TestValidationJobs(t *testing.T) {
	policy := builders.MakeQuantGatePolicy("jobs", "fp8-current-scaling").MinSNRdB("25").Period(time.Hour).Obj()
	f := newFixture(t, policy)

	// The first job: deterministic name, controlled by the policy, labelled,
	// the policy's validation on its ClusterQuantRecipe.
	if got := f.at(time.Minute); got != 59*time.Minute {
		t.Errorf("requeue after %s, want 59m (the next period)", got)
	}
	job := &kquantv1alpha1.QuantJob{}
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: managerNS, Name: "jobs-1-0"}, job); err != nil {
		t.Fatal(err)
	}
	p := f.get()
	if !metav1.IsControlledBy(job, p) || job.Labels[kquantv1alpha1.LabelGatePolicy] != "jobs" {
		t.Errorf("job owners %+v labels %v, want controlled by and labelled with the policy", job.OwnerReferences, job.Labels)
	}
	wantSpec := kquantv1alpha1.QuantJobSpec{
		RecipeRef: kquantv1alpha1.RecipeReference{Kind: kquantv1alpha1.RecipeKindCluster, Name: "fp8-current-scaling"},
		Mode:      kquantv1alpha1.JobModeValidation, Level: kquantv1alpha1.LevelQuick, Tolerances: kquantv1alpha1.Tolerances{MinSNRdB: "25"},
	}
	if job.Spec.RecipeRef != wantSpec.RecipeRef || job.Spec.Mode != wantSpec.Mode || job.Spec.Level != wantSpec.Level ||
		job.Spec.Tolerances != wantSpec.Tolerances || job.Spec.Placement.Policy != kquantv1alpha1.PlacementEachGPU || job.Spec.Gate != nil {
		t.Errorf("job spec %+v", job.Spec)
	}
	st := p.Status
	if st.CurrentJob != "jobs-1-0" || st.JobNamespace != managerNS || st.ObservedGeneration != 1 ||
		!meta.IsStatusConditionTrue(st.Conditions, kquantv1alpha1.GatePolicyConditionReady) ||
		!meta.IsStatusConditionFalse(st.Conditions, kquantv1alpha1.GatePolicyConditionConflict) {
		t.Errorf("status %+v", st)
	}

	// The next period comes while the job still runs: no second job.
	f.at(time.Hour + time.Minute)
	if got := names(f.jobs(c)); !slices.Equal(got, []string{"jobs-1-0"}) {
		t.Errorf("jobs %v while the first runs, want only it", got)
	}
	// Once it finished, the current period's job starts (late), and the
	// status names both.
	f.finishJob("jobs-1-0", kquantv1alpha1.JobPhaseSucceeded)
	f.at(time.Hour + 2*time.Minute)
	if got := names(f.jobs(c)); !slices.Equal(got, []string{"jobs-1-0", "jobs-1-1"}) {
		t.Errorf("jobs %v, want the first and the second period's", got)
	}
	if st := f.get().Status; st.CurrentJob != "jobs-1-1" || st.LastJob != "jobs-1-0" {
		t.Errorf("current %q last %q", st.CurrentJob, st.LastJob)
	}

	// A spec change replaces the active job with one of the new generation.
	p = f.get()
	p.Spec.Validation.Tolerances.MinSNRdB = "30"
	if err := c.Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	f.at(time.Hour + 3*time.Minute)
	if got := names(f.jobs(c)); !slices.Equal(got, []string{"jobs-1-0", "jobs-2-1"}) {
		t.Errorf("jobs %v after a spec change, want jobs-1-1 replaced by jobs-2-1", got)
	}

	// History: at most HistoryLimit finished jobs stay, the newest.
	for i := 2; i < 2+gatepolicy.HistoryLimit+1; i++ {
		f.finishJob(fmt.Sprintf("jobs-2-%d", i-1), kquantv1alpha1.JobPhaseFailed)
		f.at(time.Duration(i)*time.Hour + time.Minute)
	}
	want := []string{"jobs-2-2", "jobs-2-3", "jobs-2-4", "jobs-2-5"}
	if got := names(f.jobs(c)); !slices.Equal(got, want) {
		t.Errorf("jobs %v, want %v (three finished and the running one)", got, want)
	}
}

func TestRecipeNotFoundCreatesNothing(t *testing.T) {
	f := newFixture(t, builders.MakeQuantGatePolicy("no-recipe", "absent").Obj())
	if got := f.at(time.Minute); got != 0 {
		t.Errorf("requeue after %s with no period and no recipe, want none", got)
	}
	if got := f.jobs(c); len(got) != 0 {
		t.Errorf("jobs %v without a recipe", got)
	}
	cond := meta.FindStatusCondition(f.get().Status.Conditions, kquantv1alpha1.GatePolicyConditionReady)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != kquantv1alpha1.ReasonRecipeNotFound {
		t.Errorf("Ready %+v, want False RecipeNotFound", cond)
	}
}

func TestGatedNodesAndConflict(t *testing.T) {
	// NVFP4, which no other test validates: policies of every test share
	// the cluster.
	if !testing.Short() {
		for _, name := range []string{"nvfp4-a", "nvfp4-b"} {
			if err := c.Create(t.Context(), builders.MakeQuantRecipe(name, "").NVFP4().ClusterObj()); err != nil {
				t.Fatal(err)
			}
		}
	}
	older := newFixture(t, builders.MakeQuantGatePolicy("older", "nvfp4-a").Obj())
	// Creation timestamps have one-second resolution: the younger policy is
	// created in a later second.
	time.Sleep(1100 * time.Millisecond)
	f := newFixture(t, builders.MakeQuantGatePolicy("younger", "nvfp4-b").Obj())
	since := metav1.NewTime(time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC))
	// The younger holds the key on these nodes (it got there first): a
	// Conflict says only that the two may meet.
	record := `{"gate.kquant.dev/nvfp4":{"policy":"younger","label":true,"gpu":"GPU-a","run":"younger-1-0-0-0","since":"2026-12-07T03:00:00Z"},` +
		`"gate.kquant.dev/fp8":{"policy":"older","label":true,"since":"2026-12-07T03:00:00Z"}}`
	for _, name := range []string{"conflict-node-b", "conflict-node-a"} {
		n := builders.MakeNode(name).Obj()
		n.Annotations = map[string]string{kquantv1alpha1.AnnotationGateOwners: record}
		if err := c.Create(t.Context(), n); err != nil {
			t.Fatal(err)
		}
	}
	// The node index is read through the cache: wait for both nodes.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		nodes := &metav1.PartialObjectMetadataList{}
		nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
		if err := mgr.GetClient().List(t.Context(), nodes, client.MatchingFields{indexer.NodeGatePolicyKey: "younger"}); err != nil {
			t.Fatal(err)
		}
		if len(nodes.Items) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d nodes indexed", len(nodes.Items))
		}
	}
	older.at(time.Minute)
	f.at(time.Minute)
	st := f.get().Status
	want := []kquantv1alpha1.GatedNode{
		{Node: "conflict-node-a", Family: "nvfp4", GPU: "GPU-a", Run: "younger-1-0-0-0", Since: &since},
		{Node: "conflict-node-b", Family: "nvfp4", GPU: "GPU-a", Run: "younger-1-0-0-0", Since: &since},
	}
	if diff := cmp.Diff(want, st.GatedNodes); diff != "" || st.GatedCount != 2 {
		t.Errorf("gatedNodes (-want +got):\n%s\ngatedCount %d", diff, st.GatedCount)
	}
	cond := meta.FindStatusCondition(st.Conditions, kquantv1alpha1.GatePolicyConditionConflict)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != kquantv1alpha1.ReasonKeyHeldByOlderPolicy {
		t.Errorf("younger's Conflict %+v, want True: both validate nvfp4", cond)
	}
	if cond := meta.FindStatusCondition(older.get().Status.Conditions, kquantv1alpha1.GatePolicyConditionConflict); cond == nil || cond.Status != metav1.ConditionFalse {
		t.Errorf("older's Conflict %+v, want False", cond)
	}
}

// TestIdleValidationJobsAreLeftAlone: a job of the policy's idle validation
// (controllers/idlevalidation owns it) is neither the generation's job nor
// one to replace: the periodic job is created beside it, and it stays.
func TestIdleValidationJobsAreLeftAlone(t *testing.T) {
	f := newFixture(t, builders.MakeQuantGatePolicy("idle-alone", "fp8-current-scaling").IdleValidation(time.Hour, time.Hour).Obj())
	p := f.get()
	idle := domaingatepolicy.JobFor(p, managerNS, "idle-alone-idle-0000000a-0")
	idle.Labels[kquantv1alpha1.LabelIdleValidation] = "true"
	if err := controllerutil.SetControllerReference(p, idle, c.Scheme()); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), idle); err != nil {
		t.Fatal(err)
	}
	f.at(time.Minute)
	if got := names(f.jobs(c)); !slices.Equal(got, []string{"idle-alone-1-0", idle.Name}) {
		t.Errorf("jobs %v, want the generation's job beside the idle one", got)
	}
	if st := f.get().Status; st.CurrentJob != "idle-alone-1-0" {
		t.Errorf("currentJob %q, want the generation's job", st.CurrentJob)
	}
}
