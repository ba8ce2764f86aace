// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package binder

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/quantrun"
)

// heldGPUs is the set of GPUs held by active runs (bound, not finished), kept
// from the QuantRun informer's events instead of listed for every decision.
// A binding at creation decides under the pass's lock, once per job: listing
// the active runs of 8,000 GPUs there for every job of a burst serialised the
// whole job controller behind that lock (docs/benchmarks.md, "Controller at
// scale").
//
// It also remembers which runs it has seen bound, so that the binder forgets
// an assumption only once this set accounts for the run: the informer's
// handlers run after its cache is updated, and an assumption dropped because
// the cache shows the run bound would leave its GPU free here until the
// handler caught up.
type heldGPUs struct {
	mu sync.RWMutex
	// bound maps every bound run seen to its GPU, and whether it is active.
	bound map[types.NamespacedName]heldRun
	// holders counts the active runs on each GPU (one, unless something is
	// wrong: a count keeps one run's end from freeing another's GPU).
	holders map[string]int
	// waiting are the runs seen unbound and not finished.
	waiting map[types.NamespacedName]struct{}
	// synced reports whether the handler has seen the informer's initial
	// list; nil until registered.
	synced func() bool
}

type heldRun struct {
	gpu    string
	active bool
}

func newHeldGPUs() *heldGPUs {
	return &heldGPUs{bound: map[types.NamespacedName]heldRun{}, holders: map[string]int{}, waiting: map[types.NamespacedName]struct{}{}}
}

// register adds the handler to the QuantRun informer.
func (h *heldGPUs) register(informer cache.Informer) error {
	reg, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    h.observe,
		UpdateFunc: func(_, obj any) { h.observe(obj) },
		DeleteFunc: h.remove,
	})
	if err != nil {
		return fmt.Errorf("tracking the GPUs of active runs: %w", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.synced = reg.HasSynced
	return nil
}

// ready reports whether the set accounts for every run of the cache's
// initial list.
func (h *heldGPUs) ready() bool {
	h.mu.RLock()
	synced := h.synced
	h.mu.RUnlock()
	return synced != nil && synced()
}

func (h *heldGPUs) observe(obj any) {
	run, ok := obj.(*kquantv1alpha1.QuantRun)
	if !ok {
		return
	}
	key := types.NamespacedName{Namespace: run.Namespace, Name: run.Name}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.release(key)
	if quantrun.IsWaiting(run) {
		h.waiting[key] = struct{}{}
	}
	if quantrun.IsBound(run) {
		r := heldRun{gpu: run.Spec.GPUUUID, active: quantrun.IsActive(run)}
		h.bound[key] = r
		if r.active {
			h.holders[r.gpu]++
		}
	}
}

func (h *heldGPUs) remove(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	run, ok := obj.(*kquantv1alpha1.QuantRun)
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.release(types.NamespacedName{Namespace: run.Namespace, Name: run.Name})
}

// release forgets run key; h.mu is held.
func (h *heldGPUs) release(key types.NamespacedName) {
	delete(h.waiting, key)
	r, ok := h.bound[key]
	if !ok {
		return
	}
	delete(h.bound, key)
	if !r.active {
		return
	}
	if h.holders[r.gpu]--; h.holders[r.gpu] <= 0 {
		delete(h.holders, r.gpu)
	}
}

// held reports whether an active run holds gpu.
func (h *heldGPUs) held(gpu string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.holders[gpu] > 0
}

// anyWaitingBut reports whether a run waits for a GPU, other than the runs
// in assumed (a pass is binding them). A binding at creation asks once per
// job: listing the pending runs from the cache copied every one of them.
func (h *heldGPUs) anyWaitingBut(assumed map[types.NamespacedName]assumption) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for key := range h.waiting {
		if _, ok := assumed[key]; !ok {
			return true
		}
	}
	return false
}

// seenBound reports whether the set has seen run key bound.
func (h *heldGPUs) seenBound(key types.NamespacedName) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	_, ok := h.bound[key]
	return ok
}

// busyView is what one decision takes as busy: GPUs held by active runs, and
// the GPUs in taken (assumed bindings, other pods' allocations, and what the
// decision gives out).
type busyView struct {
	held  *heldGPUs
	taken map[string]bool
}

func (b busyView) Has(gpu string) bool { return b.taken[gpu] || b.held.held(gpu) }

func (b busyView) Add(gpu string) { b.taken[gpu] = true }
