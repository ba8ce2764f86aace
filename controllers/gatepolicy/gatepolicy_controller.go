// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gatepolicy

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	k8sworkqueue "k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/apply"
	"github.com/kquant/kquant/controllers/internal/conflict"
	"github.com/kquant/kquant/controllers/internal/fleet"
	"github.com/kquant/kquant/controllers/internal/indexer"
	domaingatepolicy "github.com/kquant/kquant/domain/gatepolicy"
	"github.com/kquant/kquant/domain/supportlabels"
	"github.com/kquant/kquant/internal/logging"
)

// ControllerName is the controller's stable name.
const ControllerName = "quantgatepolicy"

// HistoryLimit is how many finished validation jobs of a policy are kept.
const HistoryLimit = 3

// Event reasons, on the policy.
const (
	ReasonValidationCreated  = "ValidationCreated"
	ReasonValidationReplaced = "ValidationReplaced"
	ReasonValidationDeleted  = "ValidationDeleted"
)

// Reconciler runs QuantGatePolicies' validations and writes their status.
type Reconciler struct {
	client   client.Client
	recorder events.EventRecorder
	clock    clock.PassiveClock
	// namespace is the manager's own, where the validation jobs live.
	namespace string
}

// New returns a Reconciler creating jobs in namespace and telling the time by clk.
func New(c client.Client, recorder events.EventRecorder, clk clock.PassiveClock, namespace string) *Reconciler {
	return &Reconciler{client: c, recorder: recorder, clock: clk, namespace: namespace}
}

// The validation jobs set blockOwnerDeletion on their policy, which the
// OwnerReferencesPermissionEnforcement admission plugin allows only to who
// may update the policy's finalizers.
// +kubebuilder:rbac:groups=kquant.dev,resources=quantgatepolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=kquant.dev,resources=quantgatepolicies/status,verbs=get;patch
// +kubebuilder:rbac:groups=kquant.dev,resources=quantgatepolicies/finalizers,verbs=update
// +kubebuilder:rbac:groups=kquant.dev,resources=quantjobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=kquant.dev,resources=clusterquantrecipes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile creates the policy's due validation job, trims its history and
// writes its status; it requeues at the next period.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	p := &kquantv1alpha1.QuantGatePolicy{}
	if err := r.client.Get(ctx, req.NamespacedName, p); err != nil || !p.DeletionTimestamp.IsZero() {
		// Gone or going: the garbage collector deletes its jobs, and package
		// gate lifts its gates.
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	jobs, err := r.jobs(ctx, p)
	if err != nil {
		return reconcile.Result{}, err
	}
	status := p.Status.DeepCopy()
	status.ObservedGeneration, status.JobNamespace = p.Generation, r.namespace
	recipe := &kquantv1alpha1.ClusterQuantRecipe{}
	var result reconcile.Result
	switch err := r.client.Get(ctx, types.NamespacedName{Name: p.Spec.RecipeRef.Name}, recipe); {
	case apierrors.IsNotFound(err):
		recipe = nil
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: kquantv1alpha1.GatePolicyConditionReady, Status: metav1.ConditionFalse,
			ObservedGeneration: p.Generation, Reason: kquantv1alpha1.ReasonRecipeNotFound,
			Message: fmt.Sprintf("ClusterQuantRecipe %s not found: no validation until it exists", p.Spec.RecipeRef.Name)})
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("getting ClusterQuantRecipe %s: %w", p.Spec.RecipeRef.Name, err)
	default:
		if result, jobs, err = r.validate(ctx, p, jobs); err != nil {
			return reconcile.Result{}, err
		}
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: kquantv1alpha1.GatePolicyConditionReady, Status: metav1.ConditionTrue,
			ObservedGeneration: p.Generation, Reason: kquantv1alpha1.ReasonValidating,
			Message: fmt.Sprintf("validating %s in namespace %s", p.Spec.RecipeRef.Name, r.namespace)})
	}
	setJobs(status, jobs)
	if err := r.conflicts(ctx, p, recipe, status); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.gated(ctx, p, status); err != nil {
		return reconcile.Result{}, err
	}
	if !equality.Semantic.DeepEqual(&p.Status, status) {
		if _, err := apply.QuantGatePolicyStatus(ctx, r.client, p, status); err != nil {
			return conflict.Requeue(err)
		}
	}
	return result, nil
}

// jobs are the validation jobs that p controls, by generation and period;
// its idle validations (package idlevalidation) are not among them.
func (r *Reconciler) jobs(ctx context.Context, p *kquantv1alpha1.QuantGatePolicy) ([]*kquantv1alpha1.QuantJob, error) {
	list := &kquantv1alpha1.QuantJobList{}
	if err := r.client.List(ctx, list, client.InNamespace(r.namespace), client.MatchingFields{indexer.JobGatePolicyKey: p.Name}); err != nil {
		return nil, fmt.Errorf("listing jobs of QuantGatePolicy %s: %w", p.Name, err)
	}
	var out []*kquantv1alpha1.QuantJob
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], p) && !kquantv1alpha1.IsIdleValidation(&list.Items[i]) {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// validate creates the job of the current generation and period unless it
// exists or a job of this generation is still active, replaces active jobs
// of older generations, deletes finished jobs beyond HistoryLimit, and
// returns the jobs left.
func (r *Reconciler) validate(ctx context.Context, p *kquantv1alpha1.QuantGatePolicy, jobs []*kquantv1alpha1.QuantJob) (reconcile.Result, []*kquantv1alpha1.QuantJob, error) {
	var period time.Duration
	if p.Spec.Period != nil {
		period = p.Spec.Period.Duration
	}
	now := r.clock.Now()
	index, next := Due(p.CreationTimestamp.Time, now, period)
	name := JobName(p.Name, p.Generation, index)
	var result reconcile.Result
	if !next.IsZero() {
		result.RequeueAfter = next.Sub(now)
	}
	var kept, finished []*kquantv1alpha1.QuantJob
	exists, active := false, false
	for _, j := range jobs {
		exists = exists || j.Name == name
		switch gen, _, _ := ParseJobName(p.Name, j.Name); {
		case j.Status.Phase.Finished():
			finished = append(finished, j)
			continue
		case gen < p.Generation && j.DeletionTimestamp.IsZero():
			if err := r.delete(ctx, p, j, ReasonValidationReplaced, "replaced job %s: the policy's spec changed"); err != nil {
				return result, nil, err
			}
			continue
		case j.DeletionTimestamp.IsZero():
			active = true
		}
		kept = append(kept, j)
	}
	slices.SortFunc(finished, olderFinished)
	for len(finished) > HistoryLimit {
		if err := r.delete(ctx, p, finished[0], ReasonValidationDeleted, "deleted job %s beyond the history limit"); err != nil {
			return result, nil, err
		}
		finished = finished[1:]
	}
	kept = append(kept, finished...)
	if exists || active {
		// Done already, or the last period's job is still running: one
		// policy never races itself for the same GPUs. Its end wakes us.
		return result, kept, nil
	}
	job, err := r.create(ctx, p, name)
	if err != nil {
		return result, nil, err
	}
	return result, append(kept, job), nil
}

// create creates p's validation job name; one that exists already (a stale
// cache) is not an error.
func (r *Reconciler) create(ctx context.Context, p *kquantv1alpha1.QuantGatePolicy, name string) (*kquantv1alpha1.QuantJob, error) {
	job := domaingatepolicy.JobFor(p, r.namespace, name)
	if err := controllerutil.SetControllerReference(p, job, r.client.Scheme()); err != nil {
		return nil, fmt.Errorf("owning job %s: %w", name, err)
	}
	if err := r.client.Create(ctx, job); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return job, nil
		}
		return nil, fmt.Errorf("creating job %s/%s: %w", r.namespace, name, err)
	}
	r.recorder.Eventf(p, job, corev1.EventTypeNormal, ReasonValidationCreated, "Validate", "created job %s/%s", r.namespace, name)
	logging.FromContext(ctx).Info("Validation job created", "quantGatePolicy", p.Name, "quantJob", klog.KObj(job))
	return job, nil
}

// delete deletes job and its runs.
func (r *Reconciler) delete(ctx context.Context, p *kquantv1alpha1.QuantGatePolicy, job *kquantv1alpha1.QuantJob, reason, note string) error {
	if err := r.client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting job %s/%s: %w", job.Namespace, job.Name, err)
	}
	r.recorder.Eventf(p, job, corev1.EventTypeNormal, reason, "Delete", note, job.Name)
	return nil
}

// setJobs sets status's job fields from jobs: the newest active job, the
// newest finished one, and when the newest was created.
func setJobs(status *kquantv1alpha1.QuantGatePolicyStatus, jobs []*kquantv1alpha1.QuantJob) {
	status.CurrentJob, status.LastJob = "", ""
	var lastFinished *kquantv1alpha1.QuantJob
	for _, j := range jobs {
		if j.CreationTimestamp.IsZero() {
			continue
		}
		if status.LastValidationTime == nil || j.CreationTimestamp.After(status.LastValidationTime.Time) {
			status.LastValidationTime = j.CreationTimestamp.DeepCopy()
		}
		switch {
		case j.Status.Phase.Finished() && (lastFinished == nil || olderFinished(lastFinished, j) < 0):
			lastFinished = j
		case !j.Status.Phase.Finished() && j.DeletionTimestamp.IsZero() && (status.CurrentJob == "" || j.Name > status.CurrentJob):
			status.CurrentJob = j.Name
		}
	}
	if lastFinished != nil {
		status.LastJob = lastFinished.Name
	}
}

// conflicts sets the Conflict condition: True when an older policy validates
// a recipe of the same family, and so gates the same key.
func (r *Reconciler) conflicts(ctx context.Context, p *kquantv1alpha1.QuantGatePolicy, recipe *kquantv1alpha1.ClusterQuantRecipe, status *kquantv1alpha1.QuantGatePolicyStatus) error {
	cond := metav1.Condition{Type: kquantv1alpha1.GatePolicyConditionConflict, Status: metav1.ConditionFalse, ObservedGeneration: p.Generation,
		Reason: kquantv1alpha1.ReasonNoConflict, Message: "no older policy gates the same key"}
	if recipe != nil {
		policies := &kquantv1alpha1.QuantGatePolicyList{}
		if err := r.client.List(ctx, policies); err != nil {
			return fmt.Errorf("listing QuantGatePolicies: %w", err)
		}
		var older []string
		for i := range policies.Items {
			q := &policies.Items[i]
			if q.Name == p.Name || !olderPolicy(q, p) {
				continue
			}
			qr := &kquantv1alpha1.ClusterQuantRecipe{}
			if err := r.client.Get(ctx, types.NamespacedName{Name: q.Spec.RecipeRef.Name}, qr); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("getting ClusterQuantRecipe %s: %w", q.Spec.RecipeRef.Name, err)
			} else if err == nil && supportlabels.Family(qr.Spec.Scheme) == supportlabels.Family(recipe.Spec.Scheme) {
				older = append(older, q.Name)
			}
		}
		if len(older) > 0 {
			slices.Sort(older)
			cond.Status, cond.Reason = metav1.ConditionTrue, kquantv1alpha1.ReasonKeyHeldByOlderPolicy
			cond.Message = fmt.Sprintf("older policies %s gate %s%s too: on a node one of them holds, this policy sets nothing and records a GateBlocked event",
				strings.Join(older, ", "), kquantv1alpha1.GateLabelPrefix, supportlabels.Family(recipe.Spec.Scheme))
		}
	}
	meta.SetStatusCondition(&status.Conditions, cond)
	return nil
}

// olderPolicy reports whether a was created before b (by name on a tie): the
// order in which policies claim a free key.
func olderPolicy(a, b *kquantv1alpha1.QuantGatePolicy) bool {
	return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), strings.Compare(a.Name, b.Name)) < 0
}

// gated reads status.gatedNodes back from the Nodes' ownership records.
func (r *Reconciler) gated(ctx context.Context, p *kquantv1alpha1.QuantGatePolicy, status *kquantv1alpha1.QuantGatePolicyStatus) error {
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := r.client.List(ctx, nodes, client.MatchingFields{indexer.NodeGatePolicyKey: p.Name}); err != nil {
		return fmt.Errorf("listing nodes gated by %s: %w", p.Name, err)
	}
	status.GatedNodes, status.GatedCount = GatedNodes(p.Name, nodes.Items)
	return nil
}

// olderFinished orders finished jobs oldest first: by completion time, then
// creation time, then name.
func olderFinished(a, b *kquantv1alpha1.QuantJob) int {
	at, bt := time.Time{}, time.Time{}
	if a.Status.CompletionTime != nil {
		at = a.Status.CompletionTime.Time
	}
	if b.Status.CompletionTime != nil {
		bt = b.Status.CompletionTime.Time
	}
	return cmp.Or(at.Compare(bt), a.CreationTimestamp.Compare(b.CreationTimestamp.Time), strings.Compare(a.Name, b.Name))
}

// workqueue is the queue an event handler adds requests to.
type workqueue = k8sworkqueue.TypedRateLimitingInterface[reconcile.Request]

// ownerPolicies maps a Node whose ownership record changed to the policies
// named before or after the change, so that both report the change.
func ownerPolicies() handler.EventHandler {
	enqueue := func(q workqueue, objs ...client.Object) {
		for _, o := range objs {
			for _, name := range indexer.NodeGatePolicy(o) {
				q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
			}
		}
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue) { enqueue(q, e.Object) },
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue) {
			if e.ObjectOld.GetAnnotations()[kquantv1alpha1.AnnotationGateOwners] != e.ObjectNew.GetAnnotations()[kquantv1alpha1.AnnotationGateOwners] {
				enqueue(q, e.ObjectOld, e.ObjectNew)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue) { enqueue(q, e.Object) },
	}
}

// recipePolicies maps a ClusterQuantRecipe to the policies that validate it.
func (r *Reconciler) recipePolicies(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &kquantv1alpha1.QuantGatePolicyList{}
	if err := r.client.List(ctx, list, client.MatchingFields{indexer.GatePolicyRecipeKey: obj.GetName()}); err != nil {
		logging.FromContext(ctx).Error(err, "Listing the gate policies of a recipe", "clusterQuantRecipe", obj.GetName())
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
	}
	return out
}

// allPolicies maps a deleted policy to every other policy: one of them may
// have lost its Conflict.
func (r *Reconciler) allPolicies(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &kquantv1alpha1.QuantGatePolicyList{}
	if err := r.client.List(ctx, list); err != nil {
		logging.FromContext(ctx).Error(err, "Listing gate policies")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
	}
	return out
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	onlyDeletes := predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&kquantv1alpha1.QuantGatePolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&kquantv1alpha1.QuantJob{}).
		Watches(&kquantv1alpha1.QuantGatePolicy{}, handler.EnqueueRequestsFromMapFunc(r.allPolicies), builder.WithPredicates(onlyDeletes)).
		Watches(&kquantv1alpha1.ClusterQuantRecipe{}, handler.EnqueueRequestsFromMapFunc(r.recipePolicies)).
		WatchesMetadata(fleet.NodeMetadata(), ownerPolicies()).
		Complete(r)
}
