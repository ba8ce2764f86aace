// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package nodelabels

import (
	"context"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/internal/fleet"
	"github.com/kquant/kquant/controllers/internal/nodewriter"
	"github.com/kquant/kquant/domain/supportlabels"
	"github.com/kquant/kquant/internal/logging"
)

// ControllerName is the controller's stable name.
const ControllerName = "nodelabels"

// Reconciler keeps the owned labels of one Node (request name = node name)
// in line with its profile.
type Reconciler struct {
	client client.Client
	// recorder records an Event on the Node for every change: a Node is the
	// platform's, and whoever changes it says so (docs/security.md).
	recorder events.EventRecorder
}

// New returns a Reconciler.
func New(c client.Client, recorder events.EventRecorder) *Reconciler {
	return &Reconciler{client: c, recorder: recorder}
}

// ReasonRecipeLabelsChanged is the reason of the Event recorded on a Node
// whose recipe-support labels changed.
const ReasonRecipeLabelsChanged = "RecipeLabelsChanged"

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=kquant.dev,resources=gpunodeprofiles,verbs=get;list;watch

// Reconcile patches the Node's owned labels, only when they differ.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := fleet.NodeMetadata()
	if err := r.client.Get(ctx, types.NamespacedName{Name: req.Name}, node); err != nil {
		// No Node (a simulated agent): nothing to label.
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	profile := &kquantv1alpha1.GPUNodeProfile{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: req.Name}, profile); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, err
	} else if err != nil {
		profile = nil
	}
	changes := supportlabels.Changes(node.Labels, supportlabels.Desired(profile))
	if len(changes) == 0 {
		return reconcile.Result{}, nil
	}
	if _, err := nodewriter.Write(ctx, r.client, node, nodewriter.Marks{Labels: changes}); err != nil {
		return reconcile.Result{}, err
	}
	// The profile is the cause; a nil *GPUNodeProfile in the interface would
	// not read as "no related object".
	var related runtime.Object
	if profile != nil {
		related = profile
	}
	r.recorder.Eventf(node, related, corev1.EventTypeNormal, ReasonRecipeLabelsChanged, "Label", "%s", describe(changes))
	logging.FromContext(ctx).V(logging.Debug).Info("Node labels updated", "node", req.Name, "changes", changes)
	return reconcile.Result{}, nil
}

// describe renders label changes for an Event, in key order:
// "kquant.dev/fp8=native, kquant.dev/nvfp4 removed".
func describe(changes map[string]any) string {
	parts := make([]string, 0, len(changes))
	for _, k := range slices.Sorted(maps.Keys(changes)) {
		if v, ok := changes[k].(string); ok {
			parts = append(parts, k+"="+v)
		} else {
			parts = append(parts, k+" removed")
		}
	}
	return "recipe-support labels from the node's GPUNodeProfile: " + strings.Join(parts, ", ")
}

// SetupWithManager registers the controller: a profile and its Node share a
// name, so both map to the same request.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&kquantv1alpha1.GPUNodeProfile{}).
		WatchesMetadata(fleet.NodeMetadata(), &handler.EnqueueRequestForObject{}, builder.WithPredicates(fleet.NodeLabelsChanged())).
		Complete(r)
}
