// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/clock"

	"github.com/kquant/kquant/agent/baseline"
	"github.com/kquant/kquant/agent/nvml"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/logging"
)

// DefaultRefreshInterval is how often the Reporter re-reads GPU health.
const DefaultRefreshInterval = 30 * time.Second

// ReporterOptions configure a Reporter.
type ReporterOptions struct {
	Discoverer   nvml.Discoverer
	Prober       baseline.Prober
	Publisher    *Publisher
	Clock        clock.WithTicker
	Simulated    bool
	AgentVersion string
	// RefreshInterval is how often health is re-read; zero takes the default.
	RefreshInterval time.Duration
	// Allocations, when set, says which containers hold which GPU (the
	// kubelet's PodResources API); it is read every AllocationInterval and
	// the profile republished when the answer changed.
	Allocations Allocations
	// AllocationInterval is how often Allocations is read; zero takes
	// DefaultAllocationInterval.
	AllocationInterval time.Duration
}

// DefaultAllocationInterval is how often the kubelet's allocations are read:
// the PodResources API has no watch, and a GPU taken by a new pod should
// stop attracting runs within seconds.
const DefaultAllocationInterval = 5 * time.Second

// Allocations reads which containers hold which GPU, by GPU UUID.
type Allocations interface {
	Allocations(ctx context.Context) (map[string][]v1alpha1.GPUAllocation, error)
}

// Reporter discovers the node, measures baselines once, publishes the
// profile and keeps it current. It also answers which GPUs the node has,
// for the executor.
type Reporter struct {
	opts ReporterOptions

	mu        sync.RWMutex
	status    *v1alpha1.GPUNodeProfileStatus
	baselines *v1alpha1.Baselines
	stopping  bool
	// driverUpgrade is the upgrade state the agent steps aside for; empty
	// while it holds the driver.
	driverUpgrade string
	node          *nvml.Node
	allocations   map[string][]v1alpha1.GPUAllocation
}

// NewReporter returns a Reporter; call Start before anything else.
func NewReporter(opts ReporterOptions) *Reporter {
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = DefaultRefreshInterval
	}
	if opts.Prober == nil {
		opts.Prober = baseline.Null{}
	}
	if opts.AllocationInterval <= 0 {
		opts.AllocationInterval = DefaultAllocationInterval
	}
	return &Reporter{opts: opts}
}

// Start discovers the node, measures baselines (on the first GPU; they are
// re-measured each time the agent starts) and publishes the first profile.
func (r *Reporter) Start(ctx context.Context) error {
	node, err := r.opts.Discoverer.Discover(ctx)
	if err != nil {
		return fmt.Errorf("discovering GPUs: %w", err)
	}
	if len(node.GPUs) > 0 {
		m, err := r.opts.Prober.Measure(ctx, node.GPUs[0].Index)
		if err != nil {
			// Baselines are informative; a node without them still runs.
			logging.FromContext(ctx).Error(err, "Measuring baselines failed", "gpu", node.GPUs[0].Index)
		}
		r.mu.Lock()
		r.baselines = m.API()
		r.mu.Unlock()
	}
	r.readAllocations(ctx)
	return r.publish(ctx, node)
}

// readAllocations refreshes the kubelet's view; a failed read keeps the
// last one (and is logged): the kubelet restarting must not make every GPU
// look free.
func (r *Reporter) readAllocations(ctx context.Context) {
	if r.opts.Allocations == nil {
		return
	}
	a, err := r.opts.Allocations.Allocations(ctx)
	if err != nil {
		logging.FromContext(ctx).Error(err, "Reading the kubelet's GPU allocations failed")
		return
	}
	r.mu.Lock()
	r.allocations = a
	r.mu.Unlock()
}

// Run refreshes health and republishes when anything changed, until ctx
// ends.
func (r *Reporter) Run(ctx context.Context) error {
	log := logging.FromContext(ctx)
	ticker := r.opts.Clock.NewTicker(r.opts.RefreshInterval)
	defer ticker.Stop()
	// Without an allocation source, a ticker that never fires.
	var allocTick <-chan time.Time
	if r.opts.Allocations != nil {
		t := r.opts.Clock.NewTicker(r.opts.AllocationInterval)
		defer t.Stop()
		allocTick = t.C()
	}
	for {
		var node *nvml.Node
		select {
		case <-ctx.Done():
			return nil
		case <-allocTick:
			if r.upgrading() {
				continue // the kubelet's device IDs need NVML to resolve
			}
			r.readAllocations(ctx)
			r.mu.RLock()
			node = r.node
			r.mu.RUnlock()
			if node == nil {
				continue // nothing published yet to add allocations to
			}
		case <-ticker.C():
			if r.upgrading() {
				continue // the driver is released; StepAside published
			}
			n, err := r.opts.Discoverer.Discover(ctx)
			if errors.Is(err, nvml.ErrReleased) {
				continue // StepAside released it after the check above
			}
			if err != nil {
				log.Error(err, "GPU discovery failed")
				continue
			}
			node = n
		}
		if err := r.publish(ctx, node); err != nil && ctx.Err() == nil {
			log.Error(err, "Publishing GPUNodeProfile failed")
		}
	}
}

// Stop publishes the profile as not Ready, so the controller binds nothing
// more here while the agent shuts down.
func (r *Reporter) Stop(ctx context.Context) error {
	node, err := r.opts.Discoverer.Discover(ctx)
	if errors.Is(err, nvml.ErrReleased) {
		node, err = r.lastNode(), nil
	}
	if err != nil {
		return fmt.Errorf("discovering GPUs: %w", err)
	}
	r.mu.Lock()
	r.stopping = true
	r.mu.Unlock()
	return r.publish(ctx, node)
}

// StepAside makes way for a driver upgrade at state (the GPU Operator's
// upgrade state of the node): it publishes the profile as upgrading, so that
// the manager places nothing more here, and then releases the driver. The
// profile keeps the GPUs and the driver version last discovered, so that the
// driver-change trigger compares the new version with the old one. Each new
// state is published; the release happens once, even when the publishing
// fails.
func (r *Reporter) StepAside(ctx context.Context, state string) error {
	r.mu.Lock()
	r.driverUpgrade = state
	r.mu.Unlock()
	// The release does not wait for the API server: the driver manager
	// unloads the driver whether or not the manager heard of the upgrade.
	published := r.publish(ctx, r.lastNode())
	var released error
	if rel, ok := r.opts.Discoverer.(nvml.Releaser); ok {
		if err := rel.Release(); err != nil {
			released = fmt.Errorf("releasing the GPU driver: %w", err)
		}
	}
	return errors.Join(published, released)
}

// Resume takes the driver back after an upgrade: it reopens NVML,
// rediscovers the node (the new driver version, which the driver-change
// trigger re-validates) and publishes the profile without the upgrade. It
// does nothing when the agent was not stepping aside.
func (r *Reporter) Resume(ctx context.Context) error {
	if !r.upgrading() {
		return nil
	}
	if rel, ok := r.opts.Discoverer.(nvml.Releaser); ok {
		if err := rel.Reopen(ctx); err != nil {
			return fmt.Errorf("reopening the GPU driver: %w", err)
		}
	}
	node, err := r.opts.Discoverer.Discover(ctx)
	if err != nil {
		return fmt.Errorf("discovering GPUs after the driver upgrade: %w", err)
	}
	r.mu.Lock()
	r.driverUpgrade = ""
	r.mu.Unlock()
	logging.FromContext(ctx).Info("Took the GPU driver back after its upgrade", "driver", node.DriverVersion)
	r.readAllocations(ctx)
	return r.publish(ctx, node)
}

func (r *Reporter) upgrading() bool { return r.DriverUpgrade() != "" }

// DriverUpgrade is the upgrade state the agent steps aside for; empty while
// it holds the driver.
func (r *Reporter) DriverUpgrade() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.driverUpgrade
}

func (r *Reporter) lastNode() *nvml.Node {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.node
}

func (r *Reporter) publish(ctx context.Context, node *nvml.Node) error {
	r.mu.RLock()
	in := Input{
		Node:          node,
		Backend:       r.opts.Prober.Backend(),
		Baselines:     r.baselines,
		Simulated:     r.opts.Simulated,
		AgentVersion:  r.opts.AgentVersion,
		Stopping:      r.stopping,
		DriverUpgrade: r.driverUpgrade,
		Now:           r.opts.Clock.Now(),
		Previous:      r.status,
		Allocations:   r.allocations,
	}
	r.mu.RUnlock()
	st := Build(in)
	if in.Previous != nil && equality.Semantic.DeepEqual(*in.Previous, st) {
		return nil
	}
	if err := r.opts.Publisher.Publish(ctx, st); err != nil {
		return err
	}
	logging.FromContext(ctx).Info("Published GPUNodeProfile", "gpus", st.GPUCount, "backend", st.Backend)
	r.mu.Lock()
	r.status, r.node = &st, node
	r.mu.Unlock()
	return nil
}

// SetBaselines replaces the node's baselines (those a run pod measured);
// the next refresh publishes them.
func (r *Reporter) SetBaselines(b *v1alpha1.Baselines) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.baselines = b.DeepCopy()
}

// GPU returns the node's GPU with this UUID, as last published.
func (r *Reporter) GPU(uuid string) (v1alpha1.GPU, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.status == nil {
		return v1alpha1.GPU{}, false
	}
	for _, g := range r.status.GPUs {
		if g.UUID == uuid {
			return g, true
		}
	}
	return v1alpha1.GPU{}, false
}

// Status returns a copy of the last published status, nil before Start.
func (r *Reporter) Status() *v1alpha1.GPUNodeProfileStatus {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.status == nil {
		return nil
	}
	return r.status.DeepCopy()
}
