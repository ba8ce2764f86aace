// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package nodeagent

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/kquant/kquant/agent/profile"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/logging"
)

// runBaselines keeps the profile's baselines at those of the node's latest
// finished run that measured them (results.baselines): with run pods the
// agent holds no CUDA context, so a run pod measures them on its GPU after
// its run. It reads the agent's cache of this node's runs; it writes nothing.
type runBaselines struct {
	client   client.Client
	reporter *profile.Reporter

	mu     sync.Mutex
	latest metav1.Time
}

func setupRunBaselines(mgr ctrl.Manager, opts Options, reporter *profile.Reporter) error {
	b := &runBaselines{client: mgr.GetClient(), reporter: reporter}
	onNode := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[v1alpha1.LabelNode] == opts.NodeName
	})
	err := ctrl.NewControllerManagedBy(mgr).
		Named("kquant-agent-baselines").
		For(&v1alpha1.QuantRun{}, builder.WithPredicates(onNode)).
		Complete(b)
	if err != nil {
		return fmt.Errorf("building the baselines controller: %w", err)
	}
	return nil
}

// Reconcile takes a finished run's baselines when it is the latest.
func (b *runBaselines) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	run := &v1alpha1.QuantRun{}
	if err := b.client.Get(ctx, req.NamespacedName, run); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading run %s: %w", req, err)
	}
	done := run.Status.CompletionTime
	if run.Status.Phase != v1alpha1.RunPhaseSucceeded || run.Status.Results == nil || run.Status.Results.Baselines == nil || done == nil {
		return ctrl.Result{}, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.latest.Before(done) {
		return ctrl.Result{}, nil
	}
	b.latest = *done
	b.reporter.SetBaselines(run.Status.Results.Baselines)
	logging.FromContext(ctx).V(logging.Debug).Info("Baselines from a run", "completionTime", done.String())
	return ctrl.Result{}, nil
}
