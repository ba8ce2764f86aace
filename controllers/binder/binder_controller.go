// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package binder

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/internal/conflict"
	"github.com/kquant/kquant/controllers/internal/fleet"
	"github.com/kquant/kquant/controllers/internal/indexer"
	"github.com/kquant/kquant/controllers/internal/memo"
	"github.com/kquant/kquant/controllers/metrics"
	"github.com/kquant/kquant/domain/quantrun"
	"github.com/kquant/kquant/domain/scheduling"
	"github.com/kquant/kquant/internal/logging"
)

// ControllerName is the controller's stable name.
const ControllerName = "binder"

// DefaultMaxParallel is placement.maxParallel's default, for jobs written
// before the CRD defaulted it.
const DefaultMaxParallel = 8

// passName names the one request every event maps to.
const passName = "binding-pass"

// BindWriters is how many bindings a pass writes at once. The pass decides
// every assignment first, on one consistent view, and only then writes them;
// writing them one after the other made a binding's round trip the limit of
// the whole fleet (docs/benchmarks.md, "Controller at scale").
const BindWriters = 16

// Reconciler binds runs. The work queue never runs the single request twice at
// once; within a pass, the bindings are written concurrently, so assumed is
// a memo.Map, safe for that. passMu orders a pass's decisions with bindings at creation
// (BindAtCreation): each decides on the assumptions of the other.
type Reconciler struct {
	client         client.Client
	reader         client.Reader
	recorder       events.EventRecorder
	clock          clock.PassiveClock
	metrics        *metrics.Metrics
	leaseNamespace string
	opts           Options

	passMu  sync.Mutex
	fleet   *fleetMemo
	held    *heldGPUs
	assumed memo.Map[types.NamespacedName, assumption]
}

// assumption is a binding decided, being written or written, but maybe not
// yet in the cache.
type assumption struct {
	job string
	gpu scheduling.GPU
	// creating marks a run created bound (BindAtCreation), at at: the cache
	// may not show the run at all yet.
	creating bool
	at       time.Time
}

// Options configure the binder.
type Options struct {
	// AllowSharedGPUs lets runs onto GPUs whose allocations are shared
	// (time-slicing or MPS replicas); see scheduling.ForeignAllocations. MIG
	// slices are the job's choice (spec.placement.migSlices), not this.
	AllowSharedGPUs bool
}

// New returns a Reconciler.
func New(c client.Client, recorder events.EventRecorder, clk clock.PassiveClock, m *metrics.Metrics, leaseNamespace string, opts Options) *Reconciler {
	return &Reconciler{client: c, reader: c, recorder: recorder, clock: clk, metrics: m, leaseNamespace: leaseNamespace, opts: opts,
		fleet: &fleetMemo{TTL: FleetTTL}, held: newHeldGPUs()}
}

// TrackRuns keeps the binder's set of GPUs held by active runs from informer,
// the manager's QuantRun informer. The binder binds nothing until that set
// has seen the informer's initial list.
func (r *Reconciler) TrackRuns(informer cache.Informer) error {
	return r.held.register(informer)
}

// notReadyRetry is how soon a pass runs again when the set of held GPUs has
// not seen every run yet (only at start).
const notReadyRetry = 100 * time.Millisecond

// A binding is a patch of the run; the binder's only status writes are a
// waiting run's WaitingForGPU and its clearing when the run is bound.
// +kubebuilder:rbac:groups=kquant.dev,resources=quantruns,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=kquant.dev,resources=quantruns/status,verbs=get;patch
// +kubebuilder:rbac:groups=kquant.dev,resources=quantjobs,verbs=get;list;watch
// +kubebuilder:rbac:groups=kquant.dev,resources=gpunodeprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=kquant-system,resources=leases,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile runs one binding pass over every pending run: it decides and
// assumes the bindings under passMu, then writes them.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	if !r.held.ready() {
		return reconcile.Result{RequeueAfter: notReadyRetry}, nil
	}
	r.passMu.Lock()
	p, err := r.decidePass(ctx)
	r.passMu.Unlock()
	if err != nil || p == nil {
		return reconcile.Result{}, err
	}
	return conflict.Requeue(errors.Join(r.writeBindings(ctx, p.bindings, p.byName, p.now), r.writeWaits(ctx, p.waits, p.byName)))
}

// pass is what one pass decided.
type pass struct {
	bindings []scheduling.Binding
	waits    []waiting
	byName   map[string]*kquantv1alpha1.QuantRun
	now      time.Time
}

// decidePass decides a pass's bindings on a fresh view of the fleet and
// assumes them; nil when no run waits.
func (r *Reconciler) decidePass(ctx context.Context) (*pass, error) {
	// No deep copies of the (possibly ten thousand) waiting runs: the pass
	// reads them, and bind copies the few it writes.
	pending := &kquantv1alpha1.QuantRunList{}
	if err := r.client.List(ctx, pending, client.MatchingFields{indexer.RunPhaseKey: string(kquantv1alpha1.RunPhasePending)}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing pending runs: %w", err)
	}
	r.forgetSettled(ctx)
	var waiting []*kquantv1alpha1.QuantRun
	for i := range pending.Items {
		run := &pending.Items[i]
		// An assumed run is bound by this binder; the cache has not caught up yet.
		if !r.isAssumed(client.ObjectKeyFromObject(run)) {
			waiting = append(waiting, run)
		}
	}
	if len(waiting) == 0 {
		return nil, nil
	}
	now := r.clock.Now()
	epoch := r.fleet.Begin()
	view, err := r.loadFleet(ctx)
	if err != nil {
		return nil, err
	}
	r.fleet.Put(struct{}{}, view, now, epoch)
	p, err := r.decide(ctx, waiting, view, now)
	if err != nil {
		return nil, err
	}
	for _, b := range p.bindings {
		run := p.byName[b.Run]
		r.assume(client.ObjectKeyFromObject(run), assumption{job: jobKey(run), gpu: b.GPU, at: now})
	}
	return p, nil
}

// forgetSettled drops assumptions that the set of held GPUs now accounts for
// (it has seen the run bound), or whose run is gone. A run being created
// bound is kept while the cache does not show it yet, for creationGrace at
// most. The cache showing a run bound is not enough: the set is updated after
// the cache, and until then only the assumption keeps the GPU busy.
func (r *Reconciler) forgetSettled(ctx context.Context) {
	now := r.clock.Now()
	// Only whether the run is in the cache matters: one object to read into
	// for every assumption of a pass, not a new one each (a QuantRun is
	// large, and a pass over a fleet's assumptions allocated a third of the
	// manager's garbage; docs/benchmarks.md, "Controller at scale").
	run := &kquantv1alpha1.QuantRun{}
	r.assumed.DeleteFunc(func(key types.NamespacedName, a assumption) bool {
		if r.held.seenBound(key) {
			return true
		}
		// A run being created stays assumed through its grace whether the
		// cache shows it yet or not, so its cache is not read: a miss builds
		// a NotFound error, and a burst's creations missed on every pass (a
		// tenth of the manager's allocations at 250 x 8).
		if a.creating && now.Sub(a.at) < creationGrace {
			return false
		}
		return r.client.Get(ctx, key, run, client.UnsafeDisableDeepCopy) != nil
	})
}

func (r *Reconciler) isAssumed(key types.NamespacedName) bool {
	_, ok := r.assumed.Get(key)
	return ok
}

func (r *Reconciler) assume(key types.NamespacedName, a assumption) { r.assumed.Put(key, a) }

func (r *Reconciler) unassume(key types.NamespacedName) { r.assumed.Delete(key) }

// assumptions is a copy of the assumed bindings, to read without the lock.
func (r *Reconciler) assumptions() map[types.NamespacedName]assumption {
	return r.assumed.Snapshot()
}

// decide binds what it can of waiting (runs in the cache, or runs about to be
// created) on view: the binder's rules, in one place for passes and bindings
// at creation.
func (r *Reconciler) decide(ctx context.Context, waiting []*kquantv1alpha1.QuantRun, view *fleetView, now time.Time) (*pass, error) {
	assumed := r.assumptions()
	jobs, err := r.jobCapacities(ctx, waiting, assumed)
	if err != nil {
		return nil, err
	}
	busy := r.busy(assumed, view.foreign)
	byName := map[string]*kquantv1alpha1.QuantRun{}
	var pending []scheduling.PendingRun
	for _, run := range fcfs(waiting, jobs) {
		jk := jobKey(run)
		jc := jobs[jk]
		if jc == nil {
			continue
		}
		if jc.cap.Eligible == nil {
			jc.cap.Eligible = eligibleFor(run, jc.job, view.nodes, now, view.eligible)
		}
		name := client.ObjectKeyFromObject(run).String()
		byName[name] = run
		pending = append(pending, scheduling.PendingRun{
			Name: name, Job: jk,
			TargetNode: run.Annotations[quantrun.AnnotationTargetNode], TargetGPU: run.Annotations[quantrun.AnnotationTargetGPU],
			Avoid: quantrun.SplitList(run.Annotations[quantrun.AnnotationAvoidGPUs]), AvoidNodes: quantrun.SplitList(run.Annotations[quantrun.AnnotationAvoidNodes]),
		})
	}
	caps := make(map[string]*scheduling.JobCapacity, len(jobs))
	for k, jc := range jobs {
		if jc != nil {
			caps[k] = &jc.cap
		}
	}
	bindings := scheduling.Assign(pending, caps, busy)
	return &pass{bindings: bindings, waits: waitingForGPU(pending, bindings, caps, busy, view.foreign), byName: byName, now: now}, nil
}

// isRunPod reports whether namespace/pod is one of kquant's run pods: a run
// pod is named after its run.
func (r *Reconciler) isRunPod(ctx context.Context) func(namespace, pod string) bool {
	return func(namespace, pod string) bool {
		run := &kquantv1alpha1.QuantRun{}
		return r.client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: pod}, run, client.UnsafeDisableDeepCopy) == nil
	}
}

// writeBindings writes the pass's bindings, BindWriters at a time. Assign gave
// every binding a distinct free GPU, so concurrent writes never bind one GPU
// twice; a failed binding does not stop the others, and the errors are joined.
func (r *Reconciler) writeBindings(ctx context.Context, bindings []scheduling.Binding, byName map[string]*kquantv1alpha1.QuantRun, now time.Time) error {
	errs := make([]error, len(bindings))
	var g errgroup.Group
	g.SetLimit(BindWriters)
	for i, b := range bindings {
		g.Go(func() error {
			errs[i] = r.bind(ctx, byName[b.Run], b.GPU, now)
			return nil
		})
	}
	_ = g.Wait()
	return errors.Join(errs...)
}

// jobState is a job with its capacity in this pass.
type jobState struct {
	job *kquantv1alpha1.QuantJob
	cap scheduling.JobCapacity
}

func jobKey(run *kquantv1alpha1.QuantRun) string {
	return run.Namespace + "/" + run.Spec.JobRef.Name
}

// jobCapacities loads the jobs of the waiting runs that may still bind runs:
// existing, not being deleted, not finished, below maxParallel.
func (r *Reconciler) jobCapacities(ctx context.Context, waiting []*kquantv1alpha1.QuantRun, assumed map[types.NamespacedName]assumption) (map[string]*jobState, error) {
	out := map[string]*jobState{}
	assumedByJob := map[string][]types.NamespacedName{}
	for key, a := range assumed {
		assumedByJob[a.job] = append(assumedByJob[a.job], key)
	}
	for _, run := range waiting {
		k := jobKey(run)
		if _, seen := out[k]; seen {
			continue
		}
		out[k] = nil
		job := &kquantv1alpha1.QuantJob{}
		if err := r.client.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.JobRef.Name}, job, client.UnsafeDisableDeepCopy); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return nil, fmt.Errorf("getting job %s: %w", k, err)
			}
			continue
		}
		if job.DeletionTimestamp != nil || job.UID != run.Spec.JobRef.UID ||
			job.Status.Phase.Finished() {
			continue
		}
		runs := &kquantv1alpha1.QuantRunList{}
		if err := r.client.List(ctx, runs, client.InNamespace(job.Namespace), client.MatchingFields{indexer.RunJobKey: job.Name}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing runs of job %s: %w", k, err)
		}
		st := &jobState{job: job, cap: scheduling.JobCapacity{ActiveByNode: map[string]int{}}}
		active := 0
		bound := map[string]bool{}
		for i := range runs.Items {
			if quantrun.IsBound(&runs.Items[i]) {
				bound[runs.Items[i].Name] = true
			}
			if quantrun.IsActive(&runs.Items[i]) {
				active++
				st.cap.ActiveByNode[runs.Items[i].Spec.NodeName]++
			}
		}
		// Assumed bindings the cache does not show yet count as active too.
		for _, key := range assumedByJob[k] {
			if !bound[key.Name] {
				active++
				st.cap.ActiveByNode[assumed[key].gpu.Node]++
			}
		}
		st.cap.Free = int(ptr.Deref(job.Spec.Placement.MaxParallel, DefaultMaxParallel)) - active
		out[k] = st
	}
	return out, nil
}

// busy is what a decision takes as busy: the GPUs of active runs (Bound, as
// derived from a bound spec, and Running: the set of held GPUs), assumed
// bindings, and GPUs allocated to other pods (foreign).
func (r *Reconciler) busy(assumed map[types.NamespacedName]assumption, foreign map[string]string) busyView {
	taken := make(map[string]bool, len(assumed)+len(foreign))
	for _, a := range assumed {
		taken[a.gpu.UUID] = true
	}
	for uuid := range foreign {
		taken[uuid] = true
	}
	return busyView{held: r.held, taken: taken}
}

// fcfs orders runs first come, first served: by their job's creation, then
// job, then slot, then attempt. The sort keys are computed once per run, not
// per comparison (ten thousand waiting runs in a burst).
func fcfs(runs []*kquantv1alpha1.QuantRun, jobs map[string]*jobState) []*kquantv1alpha1.QuantRun {
	type keyed struct {
		run     *kquantv1alpha1.QuantRun
		created time.Time
		job     string
		slot    int
	}
	ks := make([]keyed, len(runs))
	for i, r := range runs {
		k := keyed{run: r, job: jobKey(r), slot: quantrun.Slot(r)}
		if js := jobs[k.job]; js != nil {
			k.created = js.job.CreationTimestamp.Time
		}
		ks[i] = k
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		return cmp.Or(a.created.Compare(b.created), strings.Compare(a.job, b.job),
			cmp.Compare(a.slot, b.slot), cmp.Compare(a.run.Spec.Attempt, b.run.Spec.Attempt))
	})
	out := make([]*kquantv1alpha1.QuantRun, len(ks))
	for i := range ks {
		out[i] = ks[i].run
	}
	return out
}

// eligibleFor evaluates the fleet for a job, memoised per requirement within a
// pass: jobs asking the same thing share one evaluation.
func eligibleFor(run *kquantv1alpha1.QuantRun, job *kquantv1alpha1.QuantJob, nodes []scheduling.NodeState, now time.Time, memo map[string][]scheduling.GPU) []scheduling.GPU {
	key := scheduling.RequirementKey(&run.Spec.Recipe.Spec, &job.Spec.Placement)
	if g, ok := memo[key]; ok {
		return g
	}
	req, err := scheduling.NewRequirements(&run.Spec.Recipe.Spec, &job.Spec.Placement)
	g := []scheduling.GPU{}
	if err == nil {
		g = append(g, scheduling.EligibleGPUs(scheduling.Evaluate(nodes, &req, now))...)
		// Ordered as Assign ranks them, so that it stops at the first free
		// GPU (the ranking decides, not the order: the choice is the same).
		scheduling.SortGPUs(g)
	}
	memo[key] = g
	return g
}

// bind writes one binding in one request: spec, node label, product and
// bind-time annotations, conditional on the run's version. No status write:
// the stored phase stays Pending until the agent starts the run, and
// quantrun.Phase reports the bound run as Bound.
func (r *Reconciler) bind(ctx context.Context, run *kquantv1alpha1.QuantRun, gpu scheduling.GPU, now time.Time) error {
	// The one-run-per-GPU guard, against the index, right before the write.
	holders := &kquantv1alpha1.QuantRunList{}
	if err := r.client.List(ctx, holders, client.MatchingFields{indexer.RunActiveGPUKey: gpu.UUID}); err != nil {
		return fmt.Errorf("checking GPU %s: %w", gpu.UUID, err)
	}
	key := client.ObjectKeyFromObject(run)
	if len(holders.Items) > 0 {
		r.unassume(key)
		return nil
	}
	// run is the cache's object (listed without a copy): write a copy.
	run = run.DeepCopy()
	orig := run.DeepCopy()
	setBinding(run, gpu, now)
	if err := r.client.Patch(ctx, run, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		r.unassume(key)
		return fmt.Errorf("binding run %s to %s: %w", run.Name, gpu.UUID, client.IgnoreNotFound(err))
	}
	if run.Status.Reason == kquantv1alpha1.RunReasonWaitingForGPU {
		if err := r.clearWait(ctx, run); err != nil {
			return err
		}
	}
	r.metrics.ObserveBinding(run, now)
	// No Event per binding: it was a fifth of a run's API writes, and the
	// run's NODE and GPU columns say the same. The job's events (RunsCreated,
	// Running with the runs bound, Completed) report its runs together.
	logging.FromContext(ctx).V(logging.Debug).Info("Run bound", "quantRun", client.ObjectKeyFromObject(run), "node", gpu.Node, "gpu", gpu.UUID)
	return nil
}

// setBinding binds run to gpu in its object: spec (a MIG device's profile
// too), node label, product and bind-time annotations.
func setBinding(run *kquantv1alpha1.QuantRun, gpu scheduling.GPU, now time.Time) {
	run.Spec.NodeName, run.Spec.GPUUUID, run.Spec.GPUIndex, run.Spec.MIGProfile = gpu.Node, gpu.UUID, ptr.To(gpu.Index), gpu.MIGProfile
	if run.Labels == nil {
		run.Labels = map[string]string{}
	}
	run.Labels[kquantv1alpha1.LabelNode] = gpu.Node
	if run.Annotations == nil {
		run.Annotations = map[string]string{}
	}
	if gpu.Product != "" {
		run.Annotations[quantrun.AnnotationProduct] = gpu.Product
	}
	run.Annotations[quantrun.AnnotationBindTime] = now.UTC().Format(time.RFC3339)
}

// SetupWithManager registers the controller: every relevant change anywhere
// maps to the one binding pass, and the queue folds bursts into one pass.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	// A just-bound run's status is re-read from the API server itself (clearWait).
	r.reader = mgr.GetAPIReader()
	pass := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: passName}}}
	})
	// A fleet change first drops the fleet view that bindings at creation
	// reuse.
	fleetPass := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		r.fleet.Invalidate()
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: passName}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		Watches(&kquantv1alpha1.QuantRun{}, pass, builder.WithPredicates(runChanged())).
		Watches(&kquantv1alpha1.QuantJob{}, pass, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, jobPhaseChanged()))).
		Watches(&kquantv1alpha1.GPUNodeProfile{}, fleetPass).
		Watches(&coordinationv1.Lease{}, fleetPass, builder.WithPredicates(fleet.LeaseEvents())).
		WatchesMetadata(fleet.NodeMetadata(), fleetPass, builder.WithPredicates(fleet.NodeLabelsChanged())).
		Complete(r)
}

// runChanged passes what can free a GPU or ask for one: creation, deletion,
// a binding, and a run finishing. A bound run starting (Pending → Running)
// changes nothing a pass decides on: its GPU is busy either way.
func runChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*kquantv1alpha1.QuantRun)
		n, ok2 := e.ObjectNew.(*kquantv1alpha1.QuantRun)
		return !ok1 || !ok2 || o.Spec.GPUUUID != n.Spec.GPUUUID || o.Status.Phase.IsTerminal() != n.Status.Phase.IsTerminal()
	}}
}

func jobPhaseChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*kquantv1alpha1.QuantJob)
		n, ok2 := e.ObjectNew.(*kquantv1alpha1.QuantJob)
		return !ok1 || !ok2 || o.Status.Phase != n.Status.Phase
	}}
}
