// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantrecipe

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	"github.com/kquant/kquant/api/v1alpha1/validation"
	"github.com/kquant/kquant/controllers/internal/conflict"
	"github.com/kquant/kquant/controllers/internal/fleet"
	"github.com/kquant/kquant/domain/scheduling"
	"github.com/kquant/kquant/internal/logging"
)

// ControllerName is the controller's stable name (logs, metrics, queue).
const ControllerName = "quantrecipe"

// ClusterControllerName is the ClusterQuantRecipe controller's stable name.
const ClusterControllerName = "clusterquantrecipe"

// Reasons of the Ready condition.
const (
	// ReasonValid: the recipe passed validation and its key is computed.
	ReasonValid = "Valid"
	// ReasonInvalid: the recipe breaks a rule that admission could not check;
	// the message says which field.
	ReasonInvalid = "Invalid"
)

// Reconciler reconciles QuantRecipes, or ClusterQuantRecipes: the same spec
// and status, one reconciler of each kind.
type Reconciler struct {
	client         client.Client
	recorder       events.EventRecorder
	clock          clock.PassiveClock
	leaseNamespace string
	cluster        bool
}

// New returns a QuantRecipe Reconciler that reads agents' Leases from leaseNamespace.
func New(c client.Client, recorder events.EventRecorder, clk clock.PassiveClock, leaseNamespace string) *Reconciler {
	return &Reconciler{client: c, recorder: recorder, clock: clk, leaseNamespace: leaseNamespace}
}

// NewCluster returns the ClusterQuantRecipe Reconciler.
func NewCluster(c client.Client, recorder events.EventRecorder, clk clock.PassiveClock, leaseNamespace string) *Reconciler {
	return &Reconciler{client: c, recorder: recorder, clock: clk, leaseNamespace: leaseNamespace, cluster: true}
}

// recipe is a QuantRecipe or a ClusterQuantRecipe, with its spec and status.
type recipe struct {
	client.Object
	spec   *kquantv1alpha1.QuantRecipeSpec
	status *kquantv1alpha1.QuantRecipeStatus
}

// newRecipe is an empty recipe of the reconciler's kind.
func (r *Reconciler) newRecipe() recipe {
	if r.cluster {
		o := &kquantv1alpha1.ClusterQuantRecipe{}
		return recipe{o, &o.Spec, &o.Status}
	}
	o := &kquantv1alpha1.QuantRecipe{}
	return recipe{o, &o.Spec, &o.Status}
}

// applyStatus writes status as the recipe's whole status, conditional on the
// version read.
func (r recipe) applyStatus(ctx context.Context, c client.StatusClient, status *kquantv1alpha1.QuantRecipeStatus) error {
	var err error
	switch o := r.Object.(type) {
	case *kquantv1alpha1.ClusterQuantRecipe:
		_, err = apply.ClusterQuantRecipeStatus(ctx, c, o, status)
	case *kquantv1alpha1.QuantRecipe:
		_, err = apply.QuantRecipeStatus(ctx, c, o, status)
	default:
		err = fmt.Errorf("writing status of %T: not a recipe", r.Object)
	}
	return err
}

// +kubebuilder:rbac:groups=kquant.dev,resources=quantrecipes,verbs=get;list;watch
// +kubebuilder:rbac:groups=kquant.dev,resources=quantrecipes/status,verbs=get;patch
// +kubebuilder:rbac:groups=kquant.dev,resources=clusterquantrecipes,verbs=get;list;watch
// +kubebuilder:rbac:groups=kquant.dev,resources=clusterquantrecipes/status,verbs=get;patch
// +kubebuilder:rbac:groups=kquant.dev,resources=gpunodeprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=kquant-system,resources=leases,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile computes a recipe's status.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := logging.FromContext(ctx)
	recipe := r.newRecipe()
	if err := r.client.Get(ctx, req.NamespacedName, recipe.Object); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	nodes, err := fleet.Load(ctx, r.client, r.leaseNamespace)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := r.clock.Now()
	status, problems := computeStatus(recipe, nodes, now)
	if !equality.Semantic.DeepEqual(recipe.status, status) {
		// Warn once per invalid generation, not on every count change.
		newlyInvalid := len(problems) > 0 && (recipe.status.ObservedGeneration != recipe.GetGeneration() ||
			meta.IsStatusConditionTrue(recipe.status.Conditions, kquantv1alpha1.ConditionReady))
		if err := recipe.applyStatus(ctx, r.client, status); err != nil {
			return conflict.Requeue(err)
		}
		log.V(logging.Trace).Info("Recipe status updated", "key", status.Key, "native", status.Nodes.Native, "emulated", status.Nodes.Emulated)
		if newlyInvalid {
			r.recorder.Eventf(recipe.Object, nil, corev1.EventTypeWarning, ReasonInvalid, "Validate", "%s", strings.Join(problems, "; "))
		}
	}
	return reconcile.Result{RequeueAfter: nextExpiry(nodes, now)}, nil
}

// computeStatus is the recipe's whole new status, and its validation problems.
func computeStatus(recipe recipe, nodes []scheduling.NodeState, now time.Time) (*kquantv1alpha1.QuantRecipeStatus, []string) {
	st := recipe.status.DeepCopy()
	problems := validation.QuantRecipeSpecProblems(recipe.spec)
	generation := recipe.GetGeneration()
	cond := metav1.Condition{Type: kquantv1alpha1.ConditionReady, ObservedGeneration: generation}
	if len(problems) > 0 {
		st.Key, st.Format = "", ""
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonInvalid, strings.Join(problems, "; ")
	} else {
		// The key is a pure function of the spec: compute it once per generation.
		if st.ObservedGeneration != generation || st.Key == "" {
			st.Key = recipe.spec.Key()
		}
		st.Format = recipe.spec.Effective().Format
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, ReasonValid, "recipe is valid; status.key is its canonical form"
	}
	st.ObservedGeneration = generation
	st.Nodes = countNodes(recipe.spec, nodes, now)
	meta.SetStatusCondition(&st.Conditions, cond)
	return st, problems
}

// countNodes counts Ready nodes (profile Ready and agent Lease fresh) by their
// best support of the recipe.
func countNodes(recipe *kquantv1alpha1.QuantRecipeSpec, nodes []scheduling.NodeState, now time.Time) kquantv1alpha1.RecipeNodeCounts {
	var c kquantv1alpha1.RecipeNodeCounts
	for i := range nodes {
		n := &nodes[i]
		if !scheduling.ProfileReady(n.Profile) || !scheduling.LeaseFresh(n.Lease, now) {
			continue
		}
		switch scheduling.NodeRecipeSupport(n.Profile, recipe) {
		case kquantv1alpha1.SupportNative:
			c.Native++
		case kquantv1alpha1.SupportEmulated:
			c.Emulated++
		}
	}
	return c
}

// nextExpiry is how long until the first fresh Lease expires, when the counts
// may drop; zero when no Lease is fresh (a revival is an event).
func nextExpiry(nodes []scheduling.NodeState, now time.Time) time.Duration {
	var next time.Duration
	for i := range nodes {
		exp, ok := scheduling.LeaseExpiry(nodes[i].Lease)
		if !ok || !exp.After(now) {
			continue
		}
		if d := exp.Sub(now); next == 0 || d < next {
			next = d
		}
	}
	if next > 0 {
		next += 100 * time.Millisecond // wake up just after, not just before
	}
	return next
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	allRecipes := handler.EnqueueRequestsFromMapFunc(r.allRecipes)
	name := ControllerName
	if r.cluster {
		name = ClusterControllerName
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(r.newRecipe().Object).
		Watches(&kquantv1alpha1.GPUNodeProfile{}, allRecipes).
		Watches(&coordinationv1.Lease{}, allRecipes, builder.WithPredicates(fleet.LeaseEvents())).
		Complete(r)
}

// allRecipes maps a fleet change to every recipe: each one's counts may change.
func (r *Reconciler) allRecipes(ctx context.Context, _ client.Object) []reconcile.Request {
	var keys []types.NamespacedName
	if r.cluster {
		list := &kquantv1alpha1.ClusterQuantRecipeList{}
		if err := r.client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			logging.FromContext(ctx).Error(err, "Listing cluster recipes failed")
			return nil
		}
		for i := range list.Items {
			keys = append(keys, types.NamespacedName{Name: list.Items[i].Name})
		}
	} else {
		list := &kquantv1alpha1.QuantRecipeList{}
		if err := r.client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			logging.FromContext(ctx).Error(err, "Listing recipes failed")
			return nil
		}
		for i := range list.Items {
			keys = append(keys, client.ObjectKeyFromObject(&list.Items[i]))
		}
	}
	out := make([]reconcile.Request, len(keys))
	for i, k := range keys {
		out[i] = reconcile.Request{NamespacedName: k}
	}
	return out
}
