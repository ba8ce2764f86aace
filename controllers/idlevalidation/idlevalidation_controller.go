// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package idlevalidation

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/internal/indexer"
	"github.com/kquant/kquant/domain/gatepolicy"
	"github.com/kquant/kquant/internal/logging"
)

// ControllerName is the controller's stable name.
const ControllerName = "idlevalidation"

// MaxCreatesPerPass bounds the jobs one reconcile creates: a fleet that
// turns idle at once is validated in steps, not in one burst of writes.
const MaxCreatesPerPass = 100

// burstWait is how soon a pass that hit MaxCreatesPerPass comes back.
const burstWait = 5 * time.Second

// Event reasons, on the policy.
const (
	// ReasonIdleValidationCreated: an idle node's validation job was created.
	ReasonIdleValidationCreated = "IdleValidationCreated"
)

// Reconciler creates the idle validation jobs of QuantGatePolicies.
type Reconciler struct {
	client   client.Client
	recorder events.EventRecorder
	clock    clock.PassiveClock
	// namespace is the manager's own, where validation jobs live.
	namespace string
}

// New returns a Reconciler creating jobs in namespace and telling the time by clk.
func New(c client.Client, recorder events.EventRecorder, clk clock.PassiveClock, namespace string) *Reconciler {
	return &Reconciler{client: c, recorder: recorder, clock: clk, namespace: namespace}
}

// +kubebuilder:rbac:groups=kquant.dev,resources=quantgatepolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=kquant.dev,resources=quantgatepolicies/finalizers,verbs=update
// +kubebuilder:rbac:groups=kquant.dev,resources=quantjobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=kquant.dev,resources=gpunodeprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile creates the idle validation jobs that are due for one policy,
// keeps each node's newest finished one, and requeues when the next node
// becomes due.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	p := &kquantv1alpha1.QuantGatePolicy{}
	if err := r.client.Get(ctx, req.NamespacedName, p); err != nil || !p.DeletionTimestamp.IsZero() {
		// Gone or going: the garbage collector deletes its jobs.
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	last, err := r.lastJobs(ctx, p)
	if err != nil {
		return reconcile.Result{}, err
	}
	idle := p.Spec.IdleValidation
	if idle == nil {
		return reconcile.Result{}, r.deleteAll(ctx, last)
	}
	recipe := &kquantv1alpha1.ClusterQuantRecipe{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: p.Spec.RecipeRef.Name}, recipe); apierrors.IsNotFound(err) {
		// The policy's Ready condition says so; the next profile change or
		// edit of the policy looks again.
		return reconcile.Result{}, nil
	} else if err != nil {
		return reconcile.Result{}, fmt.Errorf("getting ClusterQuantRecipe %s: %w", p.Spec.RecipeRef.Name, err)
	}
	candidates, err := r.candidates(ctx, p)
	if err != nil {
		return reconcile.Result{}, err
	}
	interval := ptr.Deref(idle.Interval, metav1.Duration{Duration: time.Hour}).Duration
	now := r.clock.Now()
	var wake time.Time
	created := 0
	for _, name := range slices.Sorted(maps.Keys(candidates)) {
		n := Node{IdleSince: candidates[name].idleSince}
		if j := last[name]; j != nil {
			n.LastStart, n.Active = j.CreationTimestamp.Time, !j.Status.Phase.Finished()
		}
		due, next := Decide(n, now, idle.IdleFor.Duration, interval)
		if !due {
			if !next.IsZero() && (wake.IsZero() || next.Before(wake)) {
				wake = next
			}
			continue
		}
		if created == MaxCreatesPerPass {
			return reconcile.Result{RequeueAfter: burstWait}, nil
		}
		if err := r.create(ctx, p, name, candidates[name].hostname, now, interval); err != nil {
			return reconcile.Result{}, err
		}
		created++
	}
	if wake.IsZero() {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: wake.Sub(now)}, nil
}

// candidate is an idle node that the policy's nodeSelector admits.
type candidate struct {
	idleSince time.Time
	hostname  string
}

// candidates are the nodes whose every GPU is free (IdleSince), whose Node
// has a kubernetes.io/hostname label to pin the job with, and that the
// policy's nodeSelector admits, by name.
func (r *Reconciler) candidates(ctx context.Context, p *kquantv1alpha1.QuantGatePolicy) (map[string]candidate, error) {
	selector := labels.Everything()
	if s := p.Spec.Validation.Placement.NodeSelector; s != nil {
		var err error
		if selector, err = metav1.LabelSelectorAsSelector(s); err != nil {
			return nil, reconcile.TerminalError(fmt.Errorf("nodeSelector of QuantGatePolicy %s: %w", p.Name, err))
		}
	}
	profiles := &kquantv1alpha1.GPUNodeProfileList{}
	if err := r.client.List(ctx, profiles, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing GPUNodeProfiles: %w", err)
	}
	out := map[string]candidate{}
	for i := range profiles.Items {
		since := IdleSince(&profiles.Items[i])
		if since.IsZero() {
			continue
		}
		node := &metav1.PartialObjectMetadata{}
		node.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
		if err := r.client.Get(ctx, types.NamespacedName{Name: profiles.Items[i].Name}, node); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("getting Node %s: %w", profiles.Items[i].Name, err)
		}
		host := node.Labels[corev1.LabelHostname]
		if host == "" || !selector.Matches(labels.Set(node.Labels)) {
			continue
		}
		out[node.Name] = candidate{idleSince: since, hostname: host}
	}
	return out, nil
}

// lastJobs returns the newest idle validation job of p per node, and
// deletes the older finished ones.
func (r *Reconciler) lastJobs(ctx context.Context, p *kquantv1alpha1.QuantGatePolicy) (map[string]*kquantv1alpha1.QuantJob, error) {
	list := &kquantv1alpha1.QuantJobList{}
	if err := r.client.List(ctx, list, client.InNamespace(r.namespace), client.MatchingFields{indexer.JobGatePolicyKey: p.Name},
		client.MatchingLabels{kquantv1alpha1.LabelIdleValidation: "true"}); err != nil {
		return nil, fmt.Errorf("listing idle validation jobs of QuantGatePolicy %s: %w", p.Name, err)
	}
	last := map[string]*kquantv1alpha1.QuantJob{}
	for i := range list.Items {
		j := &list.Items[i]
		node := j.Annotations[kquantv1alpha1.AnnotationIdleNode]
		if !metav1.IsControlledBy(j, p) || node == "" || !j.DeletionTimestamp.IsZero() {
			continue
		}
		older := j
		if cur := last[node]; cur == nil || cur.CreationTimestamp.Before(&j.CreationTimestamp) ||
			(cur.CreationTimestamp.Equal(&j.CreationTimestamp) && cur.Name < j.Name) {
			older, last[node] = cur, j
		}
		if older != nil && older.Status.Phase.Finished() {
			if err := r.delete(ctx, older); err != nil {
				return nil, err
			}
		}
	}
	return last, nil
}

// deleteAll deletes the idle validation jobs of a policy that no longer
// asks for them.
func (r *Reconciler) deleteAll(ctx context.Context, jobs map[string]*kquantv1alpha1.QuantJob) error {
	for _, j := range jobs {
		if err := r.delete(ctx, j); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) delete(ctx context.Context, j *kquantv1alpha1.QuantJob) error {
	if err := r.client.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting idle validation job %s/%s: %w", j.Namespace, j.Name, err)
	}
	return nil
}

// create creates p's idle validation job of node; one that exists already
// (a stale cache) is not an error.
func (r *Reconciler) create(ctx context.Context, p *kquantv1alpha1.QuantGatePolicy, node, hostname string, now time.Time, interval time.Duration) error {
	job := JobFor(p, r.namespace, node, hostname, Window(p.CreationTimestamp.Time, now, interval), interval)
	if err := controllerutil.SetControllerReference(p, job, r.client.Scheme()); err != nil {
		return fmt.Errorf("owning job %s: %w", job.Name, err)
	}
	if err := r.client.Create(ctx, job); apierrors.IsAlreadyExists(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("creating idle validation job %s/%s: %w", r.namespace, job.Name, err)
	}
	r.recorder.Eventf(p, job, corev1.EventTypeNormal, ReasonIdleValidationCreated, "Validate",
		"created job %s/%s: the GPUs of node %s have been idle for %s", r.namespace, job.Name, node, p.Spec.IdleValidation.IdleFor.Duration)
	logging.FromContext(ctx).Info("Idle validation job created", "quantGatePolicy", p.Name, "node", node, "quantJob", klog.KObj(job))
	return nil
}

// JobFor is p's idle validation job of node in window: the policy's
// validation (gatepolicy.JobFor) on that node alone (its hostname label
// added to the policy's nodeSelector), labelled as an idle validation, with
// no disruption retried (a preempted run means the node is busy again),
// deleted interval after it finished.
func JobFor(p *kquantv1alpha1.QuantGatePolicy, namespace, node, hostname string, window int64, interval time.Duration) *kquantv1alpha1.QuantJob {
	job := gatepolicy.JobFor(p, namespace, JobName(p.Name, node, window))
	job.Labels[kquantv1alpha1.LabelIdleValidation] = "true"
	job.Annotations = map[string]string{kquantv1alpha1.AnnotationIdleNode: node}
	sel := job.Spec.Placement.NodeSelector
	if sel == nil {
		sel = &metav1.LabelSelector{}
	}
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[corev1.LabelHostname] = hostname
	job.Spec.Placement.NodeSelector = sel
	job.Spec.DisruptionLimit = ptr.To[int32](0)
	// Past interval the job no longer holds the node's next validation
	// back, so it goes: a fleet of idle nodes keeps no pile of jobs.
	job.Spec.TTLSecondsAfterFinished = ptr.To(int32(interval / time.Second))
	return job
}

// freeSinceChanged passes GPUNodeProfile events that can change whether a
// node is idle: creation, deletion, and an update of a GPU's freeSince or of
// the node's conditions. The allocations themselves change far more often
// (every pod start on a GPU node) and say nothing more.
func freeSinceChanged() predicate.Funcs {
	idle := func(o client.Object) time.Time {
		p, ok := o.(*kquantv1alpha1.GPUNodeProfile)
		if !ok {
			return time.Time{}
		}
		return IdleSince(p)
	}
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !idle(e.ObjectOld).Equal(idle(e.ObjectNew))
	}}
}

// idlePolicies maps a GPUNodeProfile to the policies that ask for idle
// validation: few, so the list is cheap.
func (r *Reconciler) idlePolicies(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &kquantv1alpha1.QuantGatePolicyList{}
	if err := r.client.List(ctx, list); err != nil {
		logging.FromContext(ctx).Error(err, "Listing gate policies")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if list.Items[i].Spec.IdleValidation != nil {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
	}
	return out
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&kquantv1alpha1.QuantGatePolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&kquantv1alpha1.QuantJob{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return kquantv1alpha1.IsIdleValidation(o)
		}))).
		Watches(&kquantv1alpha1.GPUNodeProfile{}, handler.EnqueueRequestsFromMapFunc(r.idlePolicies), builder.WithPredicates(freeSinceChanged())).
		Complete(r)
}
