// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/internal/conflict"
	"github.com/kquant/kquant/controllers/internal/fleet"
	"github.com/kquant/kquant/controllers/internal/indexer"
	"github.com/kquant/kquant/controllers/internal/runstatus"
	"github.com/kquant/kquant/domain/quantrun"
	"github.com/kquant/kquant/domain/scheduling"
	"github.com/kquant/kquant/internal/logging"
)

// ControllerName is the controller's stable name.
const ControllerName = "nodelifecycle"

// Reconciler reconciles agents' Leases (request = the Lease's key).
type Reconciler struct {
	client   client.Client
	recorder events.EventRecorder
	clock    clock.PassiveClock
}

// New returns a Reconciler.
func New(c client.Client, recorder events.EventRecorder, clk clock.PassiveClock) *Reconciler {
	return &Reconciler{client: c, recorder: recorder, clock: clk}
}

// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=kquant-system,resources=leases,verbs=get;list;watch
// +kubebuilder:rbac:groups=kquant.dev,resources=quantruns,verbs=get;list;watch
// +kubebuilder:rbac:groups=kquant.dev,resources=quantruns/status,verbs=get;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile fails the active runs of the Lease's node once the Lease expired,
// and otherwise comes back when it would expire.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node, ok := scheduling.NodeForLease(req.Name)
	if !ok {
		return reconcile.Result{}, nil
	}
	lease := &coordinationv1.Lease{}
	if err := r.client.Get(ctx, req.NamespacedName, lease); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, err
	} else if err != nil {
		lease = nil
	}
	now := r.clock.Now()
	if exp, ok := scheduling.LeaseExpiry(lease); ok && exp.After(now) {
		return reconcile.Result{RequeueAfter: exp.Sub(now) + 100*time.Millisecond}, nil
	}
	return conflict.Requeue(r.failRunsOn(ctx, node, lease, now))
}

func (r *Reconciler) failRunsOn(ctx context.Context, node string, lease *coordinationv1.Lease, now time.Time) error {
	runs := &kquantv1alpha1.QuantRunList{}
	if err := r.client.List(ctx, runs, client.MatchingFields{indexer.RunNodeKey: node}); err != nil {
		return fmt.Errorf("listing runs on node %s: %w", node, err)
	}
	msg := fmt.Sprintf("node %s lost: its agent's Lease %s was not renewed in time", node, kquantv1alpha1.AgentLeaseName(node))
	if lease == nil {
		msg = fmt.Sprintf("node %s lost: its agent's Lease %s is gone", node, kquantv1alpha1.AgentLeaseName(node))
	} else if lease.Spec.RenewTime != nil {
		msg = fmt.Sprintf("node %s lost: its agent's Lease %s was last renewed at %s", node, lease.Name, lease.Spec.RenewTime.UTC().Format(time.RFC3339))
	}
	var errs []error
	for i := range runs.Items {
		run := &runs.Items[i]
		if !quantrun.IsActive(run) {
			continue
		}
		completed := metav1.NewTime(now)
		err := runstatus.Apply(ctx, r.client, run, runstatus.Change{
			Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonNodeLost, Message: msg, CompletionTime: &completed,
		})
		if err != nil {
			// A conflict means the agent wrote in between (maybe Succeeded):
			// the retry looks at the run again before failing it.
			errs = append(errs, err)
			continue
		}
		r.recorder.Eventf(run, nil, corev1.EventTypeWarning, kquantv1alpha1.RunReasonNodeLost, "FailRun", "%s", msg)
		logging.FromContext(ctx).Info("Run failed: node lost", "quantRun", client.ObjectKeyFromObject(run), "node", node)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("failing runs on lost node %s: %w", node, err)
	}
	return nil
}

// SetupWithManager registers the controller on the agents' Leases (the
// manager's cache only holds Leases of the lease namespace).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&coordinationv1.Lease{}, builder.WithPredicates(fleet.LeaseEvents())).
		Complete(r)
}
