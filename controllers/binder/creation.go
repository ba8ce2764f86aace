// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package binder

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/internal/fleet"
	"github.com/kquant/kquant/controllers/internal/memo"
	"github.com/kquant/kquant/domain/scheduling"
	"github.com/kquant/kquant/internal/logging"
)

// FleetTTL is how long the views of the fleet taken by passes and for
// bindings at creation serve later bindings at creation, counted from the
// first view a memo.Timed generation holds. Fleet events (profiles, Leases
// appearing or reviving, Node labels) drop it at once, and a view read
// before such an event is not kept; a Lease that expires (no event) goes
// unseen at most this long, as in the job controller's evaluations.
const FleetTTL = time.Second

// creationGrace is how long an assumption made for a run being created
// survives while the cache does not show the run: the creator settles it as
// soon as its request returns, so this only covers a creator that vanished.
const creationGrace = 30 * time.Second

// fleetView is the fleet as a pass or a binding at creation saw it, with the
// eligible GPUs per requirement (filled by decisions, under passMu). Shared:
// read only otherwise.
type fleetView struct {
	nodes    []scheduling.NodeState
	foreign  map[string]string
	eligible map[string][]scheduling.GPU
}

// fleetMemo holds the latest fleetView for FleetTTL, under a single key.
type fleetMemo = memo.Timed[struct{}, *fleetView]

// loadFleet reads the fleet from the cache.
func (r *Reconciler) loadFleet(ctx context.Context) (*fleetView, error) {
	nodes, err := fleet.Load(ctx, r.client, r.leaseNamespace)
	if err != nil {
		return nil, err
	}
	foreign := scheduling.ForeignAllocations(nodes, r.isRunPod(ctx), r.opts.AllowSharedGPUs)
	return &fleetView{nodes: nodes, foreign: foreign, eligible: map[string][]scheduling.GPU{}}, nil
}

// BindAtCreation binds runs that the job controller is about to create, in
// the spec it will send, when the binder's next pass would bind them anyway:
// no run is waiting for a GPU (first come, first served), and the pass's own
// rules (scheduling.Assign over the job's eligible GPUs, its maxParallel, the
// free GPUs) give them a GPU. A run created bound costs one write instead of
// two (create, then bind). Runs it cannot bind are left as they are, for the
// pass. The bindings are assumed until the cache shows the runs; the caller
// reports each creation through the returned settle (created false: the run
// was not created as sent, and its GPU is free again).
func (r *Reconciler) BindAtCreation(ctx context.Context, runs []*kquantv1alpha1.QuantRun) (settle func(run *kquantv1alpha1.QuantRun, created bool)) {
	settle = func(*kquantv1alpha1.QuantRun, bool) {}
	if len(runs) == 0 || !r.held.ready() {
		return settle
	}
	// First come, first served: while a run waits, new runs wait behind it
	// for the pass. Asked before taking the pass's lock, so that a burst of
	// jobs does not queue on the lock of a pass deciding for thousands of
	// waiting runs only to learn that.
	if r.held.anyWaitingBut(r.assumptions()) {
		return settle
	}
	r.passMu.Lock()
	defer r.passMu.Unlock()
	if r.held.anyWaitingBut(r.assumptions()) {
		// A run began to wait while this one queued for the lock.
		return settle
	}
	log := logging.FromContext(ctx)
	now := r.clock.Now()
	view, ok := r.fleet.Get(struct{}{}, now)
	if !ok {
		epoch := r.fleet.Begin()
		var err error
		if view, err = r.loadFleet(ctx); err != nil {
			log.V(logging.Debug).Info("Not binding at creation", "error", err.Error())
			return settle
		}
		r.fleet.Put(struct{}{}, view, now, epoch)
	}
	p, err := r.decide(ctx, runs, view, now)
	if err != nil {
		log.V(logging.Debug).Info("Not binding at creation", "error", err.Error())
		return settle
	}
	bound := map[types.NamespacedName]scheduling.GPU{}
	for _, b := range p.bindings {
		run := p.byName[b.Run]
		setBinding(run, b.GPU, now)
		key := client.ObjectKeyFromObject(run)
		r.assume(key, assumption{job: jobKey(run), gpu: b.GPU, creating: true, at: now})
		bound[key] = b.GPU
	}
	return func(run *kquantv1alpha1.QuantRun, created bool) {
		key := client.ObjectKeyFromObject(run)
		gpu, ok := bound[key]
		if !ok {
			return
		}
		if !created {
			r.unassume(key)
			return
		}
		r.metrics.ObserveBinding(run, r.clock.Now())
		log.V(logging.Debug).Info("Run created bound", "quantRun", key, "node", gpu.Node, "gpu", gpu.UUID)
	}
}
