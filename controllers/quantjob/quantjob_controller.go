// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantjob

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/apply"
	"github.com/kquant/kquant/controllers/internal/conflict"
	"github.com/kquant/kquant/controllers/internal/fleet"
	"github.com/kquant/kquant/controllers/internal/indexer"
	"github.com/kquant/kquant/domain/summary"
	"github.com/kquant/kquant/internal/logging"
)

// ControllerName is the controller's stable name.
const ControllerName = "quantjob"

// Reconciler reconciles QuantJobs.
type Reconciler struct {
	client         client.Client
	recorder       events.EventRecorder
	clock          clock.PassiveClock
	leaseNamespace string
	evaluations    *evaluations
	written        *written
	creations      *creations
	summaries      *summaries
	binder         Binder
}

// Binder binds runs about to be created where the binder's next pass would
// bind them anyway (binder.Reconciler.BindAtCreation), so that a run costs
// one write instead of a create and a binding patch. It sets the binding in
// the runs it binds, and settle is told whether each run was created as sent.
type Binder interface {
	BindAtCreation(ctx context.Context, runs []*kquantv1alpha1.QuantRun) (settle func(run *kquantv1alpha1.QuantRun, created bool))
}

// New returns a Reconciler that reads agents' Leases from leaseNamespace and
// creates runs bound through b (nil: every run is created unbound, for the
// binder's pass).
func New(c client.Client, recorder events.EventRecorder, clk clock.PassiveClock, leaseNamespace string, b Binder) *Reconciler {
	return &Reconciler{client: c, recorder: recorder, clock: clk, leaseNamespace: leaseNamespace, evaluations: newEvaluations(),
		written: &written{}, creations: newCreations(), summaries: &summaries{}, binder: b}
}

// +kubebuilder:rbac:groups=kquant.dev,resources=quantjobs,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=kquant.dev,resources=quantjobs/status,verbs=get;patch
// +kubebuilder:rbac:groups=kquant.dev,resources=quantjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=kquant.dev,resources=quantruns,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=kquant.dev,resources=quantruns/status,verbs=get;patch
// +kubebuilder:rbac:groups=kquant.dev,resources=quantrecipes,verbs=get;list;watch
// +kubebuilder:rbac:groups=kquant.dev,resources=clusterquantrecipes,verbs=get;list;watch
// +kubebuilder:rbac:groups=kquant.dev,resources=gpunodeprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=kquant-system,resources=leases,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile drives one job; lost write races are retried quietly.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return conflict.Result(r.reconcile(ctx, req))
}

func (r *Reconciler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	job := &kquantv1alpha1.QuantJob{}
	if err := r.client.Get(ctx, req.NamespacedName, job); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
		// The job is gone: whatever runs still carry its name are orphans.
		r.written.forget(req.NamespacedName)
		r.creations.forget(req.NamespacedName)
		r.summaries.forget(req.NamespacedName)
		_, err := r.runsOf(ctx, req.NamespacedName, "")
		return reconcile.Result{}, err
	}
	runs, err := r.runsOf(ctx, req.NamespacedName, job.UID)
	if err != nil || job.DeletionTimestamp != nil {
		return reconcile.Result{}, err
	}
	if version, status, ok := r.written.newerThanCache(req.NamespacedName, job.UID, job.ResourceVersion); ok {
		// The cache is behind this process's last status write: build on
		// that write, and write (if at all) on its version.
		job.ResourceVersion, job.Status = version, *status.DeepCopy()
	}
	if job.Status.Phase.Finished() {
		r.summaries.forget(req.NamespacedName)
		after, err := r.finish(ctx, job, runs)
		return reconcile.Result{RequeueAfter: after}, err
	}

	now := r.clock.Now()
	var out outcome
	out.failReason, out.failMessage = decideFailure(job, runs, now)
	switch {
	case out.failReason != "":
	case r.creations.unseen(req.NamespacedName, runs, now):
		// Runs this process created are not in the cache yet: counted from
		// it, the status would go backwards, and the slot of a retry not
		// seen yet would be retried again. Their events reconcile the job.
		return reconcile.Result{RequeueAfter: r.nextDeadline(job, &job.Status, now)}, nil
	case job.Status.Total == 0:
		// Not expanded yet (or an expansion was cut short): create what is
		// missing. A cache behind this process's own expansion cannot get
		// here: the status built on above is the one that recorded it.
		runs, out, err = r.expand(ctx, job, runs, now)
	default:
		runs, err = r.retry(ctx, job, runs)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	status := computeStatus(job, runs, out, now, func(succeeded []summary.Run) *kquantv1alpha1.JobSummary {
		return r.summaries.summarize(req.NamespacedName, job.UID, succeeded)
	})
	if status.Phase != kquantv1alpha1.JobPhaseFailed && status.Succeeded < job.Status.Succeeded {
		// Fewer succeeded runs than already recorded: a view that is behind,
		// never progress to write.
		return reconcile.Result{RequeueAfter: r.nextDeadline(job, &job.Status, now)}, nil
	}
	if err := r.setReferenceBackend(ctx, job, runs, status); err != nil {
		return reconcile.Result{}, err
	}
	if status.Phase == kquantv1alpha1.JobPhaseFailed {
		if err := r.failRemaining(ctx, job, runs, out.failReason, out.failMessage); err != nil {
			return reconcile.Result{}, err
		}
	}
	if err := r.writeStatus(ctx, job, status, out.expanded); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: r.nextDeadline(job, status, now)}, nil
}

// writeStatus writes status, in one request, when it differs from the job's
// (the cache's, or this process's last write where the cache is behind it),
// conditional on that version so that a stale view never overwrites newer
// status, and records the transitions a user would want to see as Events,
// with expanded, the runs this reconcile created, if any.
func (r *Reconciler) writeStatus(ctx context.Context, job *kquantv1alpha1.QuantJob, status *kquantv1alpha1.QuantJobStatus, expanded *expansion) error {
	if equality.Semantic.DeepEqual(&job.Status, status) {
		r.recordTransitions(ctx, job, job, expanded)
		return nil
	}
	key := client.ObjectKeyFromObject(job)
	rv, err := apply.QuantJobStatus(ctx, r.client, job, status)
	if err != nil {
		// Someone else wrote the job since the version written on: start
		// again from the cache. The runs were created all the same.
		r.written.forget(key)
		r.recordTransitions(ctx, job, job, expanded)
		return err
	}
	old := job.DeepCopy()
	job.Status, job.ResourceVersion = *status, rv
	r.written.record(key, job.UID, old.ResourceVersion, rv, job.Status.DeepCopy())
	r.recordTransitions(ctx, old, job, expanded)
	return nil
}

// recordTransitions records as Events what changed from old to job. An
// expansion whose runs were created bound moves the job to Running in the
// same write: one RunsCreated event then says both, since every event is an
// API write and a burst of one-run jobs would otherwise pay two per job.
func (r *Reconciler) recordTransitions(ctx context.Context, old, job *kquantv1alpha1.QuantJob, expanded *expansion) {
	log := logging.FromContext(ctx)
	startedRunning := old.Status.Phase != job.Status.Phase && job.Status.Phase == kquantv1alpha1.JobPhaseRunning
	if expanded != nil {
		message := expanded.message
		if startedRunning {
			message += fmt.Sprintf("; %d runs bound, %d waiting", job.Status.Running, job.Status.Pending)
		}
		r.recorder.Eventf(job, nil, corev1.EventTypeNormal, "RunsCreated", "Expand", "%s", message)
	}
	sched := meta.FindStatusCondition(job.Status.Conditions, kquantv1alpha1.JobConditionScheduled)
	oldSched := meta.FindStatusCondition(old.Status.Conditions, kquantv1alpha1.JobConditionScheduled)
	if sched != nil && sched.Reason == kquantv1alpha1.ReasonRecipeNotFound && (oldSched == nil || oldSched.Reason != sched.Reason) {
		r.recorder.Eventf(job, nil, corev1.EventTypeWarning, sched.Reason, "ResolveRecipe", "%s", sched.Message)
	}
	if old.Status.WaitingForGPU == 0 && job.Status.WaitingForGPU > 0 {
		r.recorder.Eventf(job, nil, corev1.EventTypeNormal, kquantv1alpha1.RunReasonWaitingForGPU, "Schedule",
			"%d runs wait for GPUs that other pods hold; they start as the GPUs become free", job.Status.WaitingForGPU)
	}
	if old.Status.Phase == job.Status.Phase {
		return
	}
	log.Info("Job phase changed", "quantJob", client.ObjectKeyFromObject(job), "from", old.Status.Phase, "to", job.Status.Phase, "progress", job.Status.Progress)
	switch job.Status.Phase {
	case kquantv1alpha1.JobPhaseUnschedulable:
		r.recorder.Eventf(job, nil, corev1.EventTypeWarning, kquantv1alpha1.ReasonUnschedulable, "Schedule", "%s", sched.Message)
	case kquantv1alpha1.JobPhaseRunning:
		if expanded == nil {
			r.recorder.Eventf(job, nil, corev1.EventTypeNormal, "Running", "Schedule", "%d runs bound, %d waiting, %s succeeded", job.Status.Running, job.Status.Pending, job.Status.Progress)
		}
	case kquantv1alpha1.JobPhaseSucceeded:
		r.completionEvent(job)
	case kquantv1alpha1.JobPhaseFailed:
		c := failedCondition(job)
		r.recorder.Eventf(job, nil, corev1.EventTypeWarning, c.Reason, "Fail", "%s", c.Message)
	}
}

// completionEvent reports a finished job with its verdict counts: a Normal
// event when it passed, a Warning when a run failed its tolerances or none
// could run the recipe.
func (r *Reconciler) completionEvent(job *kquantv1alpha1.QuantJob) {
	c := verdictCounts(&job.Status)
	typ := corev1.EventTypeNormal
	if !c.WorstVerdict().Passes() {
		typ = corev1.EventTypeWarning
	}
	r.recorder.Eventf(job, nil, typ, "Completed", "Complete", "%d runs finished: %s", job.Status.Total, countsText(c))
}

// nextDeadline is when the job must be looked at again even if nothing
// happens: its activeDeadlineSeconds, or its TTL once finished.
func (r *Reconciler) nextDeadline(job *kquantv1alpha1.QuantJob, status *kquantv1alpha1.QuantJobStatus, now time.Time) time.Duration {
	var at time.Time
	switch {
	case status.Phase.Finished() && job.Spec.TTLSecondsAfterFinished != nil && status.CompletionTime != nil:
		at = status.CompletionTime.Add(kquantv1alpha1.Seconds(*job.Spec.TTLSecondsAfterFinished))
	case !status.Phase.Finished():
		if d, ok := deadline(job); ok {
			at = d
		}
	}
	if at.IsZero() {
		return 0
	}
	return max(at.Sub(now), 0) + 50*time.Millisecond
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	// A fleet change first clears the memoised evaluations, so that the
	// reconciles it triggers see it.
	waiting := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		r.evaluations.invalidate()
		return r.unschedulableJobs(ctx, obj)
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&kquantv1alpha1.QuantJob{}).
		Owns(&kquantv1alpha1.QuantRun{}).
		Watches(&kquantv1alpha1.QuantRecipe{}, handler.EnqueueRequestsFromMapFunc(r.jobsOfRecipe)).
		Watches(&kquantv1alpha1.ClusterQuantRecipe{}, handler.EnqueueRequestsFromMapFunc(r.jobsOfClusterRecipe)).
		Watches(&kquantv1alpha1.GPUNodeProfile{}, waiting).
		Watches(&coordinationv1.Lease{}, waiting, builder.WithPredicates(fleet.LeaseEvents())).
		WatchesMetadata(fleet.NodeMetadata(), waiting, builder.WithPredicates(fleet.NodeLabelsChanged())).
		Complete(r)
}

// unschedulableJobs maps a fleet change to the jobs waiting for an eligible
// node; running jobs do not care (the binder does).
func (r *Reconciler) unschedulableJobs(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &kquantv1alpha1.QuantJobList{}
	if err := r.client.List(ctx, list, client.MatchingFields{indexer.JobPhaseKey: string(kquantv1alpha1.JobPhaseUnschedulable)}, client.UnsafeDisableDeepCopy); err != nil {
		logging.FromContext(ctx).Error(err, "Listing unschedulable jobs failed")
		return nil
	}
	return requests(list)
}

// jobsOfRecipe maps a recipe change to the jobs that reference it and have not
// expanded yet: expanded jobs use their snapshot and never look again.
func (r *Reconciler) jobsOfRecipe(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.unexpandedJobs(ctx, obj, obj.GetName(), client.InNamespace(obj.GetNamespace()))
}

// unexpandedJobs are the jobs whose JobRecipeKey is value and that have not
// expanded yet.
func (r *Reconciler) unexpandedJobs(ctx context.Context, recipe client.Object, value string, opts ...client.ListOption) []reconcile.Request {
	list := &kquantv1alpha1.QuantJobList{}
	opts = append(opts, client.MatchingFields{indexer.JobRecipeKey: value}, client.UnsafeDisableDeepCopy)
	if err := r.client.List(ctx, list, opts...); err != nil {
		logging.FromContext(ctx).Error(err, "Listing jobs of recipe failed", "recipe", client.ObjectKeyFromObject(recipe))
		return nil
	}
	kept := list.Items[:0]
	for _, j := range list.Items {
		if j.Status.Total == 0 {
			kept = append(kept, j)
		}
	}
	list.Items = kept
	return requests(list)
}

func requests(list *kquantv1alpha1.QuantJobList) []reconcile.Request {
	out := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		out[i] = reconcile.Request{NamespacedName: types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}}
	}
	return out
}
