// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package driverupgrade

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/kquant/kquant/internal/logging"
)

// Profile is what steps aside: profile.Reporter.
type Profile interface {
	// StepAside publishes the node as upgrading at state and releases the
	// driver; it is called again on each new state.
	StepAside(ctx context.Context, state string) error
	// Resume reopens the driver and publishes the node as no longer
	// upgrading; it does nothing when the agent holds the driver.
	Resume(ctx context.Context) error
}

// Watcher follows the upgrade state of one Node.
type Watcher struct {
	NodeName string
	// Client reads the Node from a cache that holds this Node alone.
	Client  client.Reader
	Profile Profile
}

// SetupWithManager watches the Node named NodeName; the manager's cache
// must hold that Node alone (a metadata.name field selector), or the agent
// would watch every Node of the cluster.
func (w *Watcher) SetupWithManager(mgr ctrl.Manager) error {
	own := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == w.NodeName })
	// Only the label matters; the kubelet's status heartbeats do not.
	labelChanged := predicate.LabelChangedPredicate{}
	err := ctrl.NewControllerManagedBy(mgr).
		Named("kquant-agent-driver-upgrade").
		For(&corev1.Node{}, builder.WithPredicates(own, labelChanged)).
		Complete(w)
	if err != nil {
		return fmt.Errorf("building the driver upgrade watcher: %w", err)
	}
	return nil
}

// Reconcile steps aside or resumes as the Node's label says. A Node that is
// gone (simulated nodes have none) holds no upgrade.
func (w *Watcher) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	node := &corev1.Node{}
	state := ""
	switch err := w.Client.Get(ctx, req.NamespacedName, node); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("reading Node %s: %w", req.Name, err)
	default:
		state = node.Labels[LabelUpgradeState]
	}
	log := logging.FromContext(ctx).WithValues("upgradeState", state)
	if StepAside(state) {
		if err := w.Profile.StepAside(ctx, state); err != nil {
			return ctrl.Result{}, fmt.Errorf("stepping aside for the driver upgrade at %s: %w", state, err)
		}
		log.Info("Stepping aside for a GPU driver upgrade: the driver is released")
		return ctrl.Result{}, nil
	}
	if err := w.Profile.Resume(ctx); err != nil {
		// Retried with backoff: the new driver may still be loading.
		return ctrl.Result{}, fmt.Errorf("taking the GPU driver back: %w", err)
	}
	return ctrl.Result{}, nil
}
