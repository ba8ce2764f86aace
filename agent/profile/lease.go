// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/logging"
)

// Lease timing, as the kubelet's node leases: renewed every 10 s, expired
// after 40 s, so three renewals may fail before the node counts as lost.
const (
	DefaultLeaseRenewInterval = 10 * time.Second
	DefaultLeaseDuration      = 40 * time.Second
)

// LeaseKeeper renews one node's Lease. Like the kubelet's node lease
// controller it creates the Lease once and then renews it with a plain Update
// of the copy it holds: a renewal is one request, with no server-side apply
// merge of managed fields (at a thousand nodes renewing every 10 s, applies
// cost the API server more than all the runs' work). An Update that conflicts
// or finds the Lease gone drops the copy; the next attempt reads or creates
// it afresh.
//
// A LeaseKeeper is used by one goroutine (Run) at a time.
type LeaseKeeper struct {
	client        client.Client
	namespace     string
	nodeName      string
	holder        string
	clock         clock.WithTicker
	renewInterval time.Duration
	duration      time.Duration
	// held is the Lease as the last write returned it; nil until the first
	// renewal and after a failed one.
	held *coordinationv1.Lease
}

// NewLeaseKeeper returns a keeper of node's Lease in namespace, held by
// holder (the agent ID). Zero intervals take the defaults.
func NewLeaseKeeper(c client.Client, clk clock.WithTicker, namespace, nodeName, holder string, renewInterval, duration time.Duration) *LeaseKeeper {
	if renewInterval <= 0 {
		renewInterval = DefaultLeaseRenewInterval
	}
	if duration <= 0 {
		duration = DefaultLeaseDuration
	}
	return &LeaseKeeper{
		client: c, clock: clk, namespace: namespace, nodeName: nodeName, holder: holder,
		renewInterval: renewInterval, duration: duration,
	}
}

// Renew writes the Lease with a fresh renewTime: one Update of the held copy
// in the steady state. When that copy is stale (a conflict: someone else wrote
// the Lease) or the Lease was deleted, it reads or re-creates the Lease and
// writes once more.
func (l *LeaseKeeper) Renew(ctx context.Context) error {
	if l.held != nil {
		err := l.update(ctx, l.held.DeepCopy())
		if err == nil || (!apierrors.IsConflict(err) && !apierrors.IsNotFound(err)) {
			return err
		}
		l.held = nil
	}
	current, err := l.getOrCreate(ctx)
	if err != nil || current == nil {
		return err
	}
	return l.update(ctx, current)
}

// getOrCreate reads the Lease, or creates it already renewed; it returns nil
// (nothing more to write) when it created the Lease.
func (l *LeaseKeeper) getOrCreate(ctx context.Context) (*coordinationv1.Lease, error) {
	key := client.ObjectKey{Namespace: l.namespace, Name: v1alpha1.AgentLeaseName(l.nodeName)}
	lease := &coordinationv1.Lease{}
	err := l.client.Get(ctx, key, lease)
	if err == nil {
		return lease, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading Lease %s: %w", key, err)
	}
	lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}
	l.renewed(lease)
	if err := l.client.Create(ctx, lease, client.FieldOwner(FieldManager)); err != nil {
		// AlreadyExists: created meanwhile (a previous process of this
		// agent); the next renewal reads it.
		return nil, fmt.Errorf("creating Lease %s: %w", key, err)
	}
	l.held = lease
	return nil, nil
}

// update renews lease (the held copy or a fresh read) with one Update.
func (l *LeaseKeeper) update(ctx context.Context, lease *coordinationv1.Lease) error {
	l.renewed(lease)
	if err := l.client.Update(ctx, lease, client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("renewing Lease %s/%s: %w", l.namespace, lease.Name, err)
	}
	l.held = lease
	return nil
}

// renewed sets what a renewal writes: holder, duration, renewTime and the
// node label the controllers select Leases by.
func (l *LeaseKeeper) renewed(lease *coordinationv1.Lease) {
	if lease.Labels == nil {
		lease.Labels = map[string]string{}
	}
	lease.Labels[v1alpha1.LabelNode] = l.nodeName
	lease.Spec.HolderIdentity = ptr.To(l.holder)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(l.duration / time.Second))
	lease.Spec.RenewTime = ptr.To(metav1.NewMicroTime(l.clock.Now()))
}

// Run renews the Lease until ctx ends. A failed renewal is logged and
// retried at the next tick; the Lease's duration leaves room for several.
func (l *LeaseKeeper) Run(ctx context.Context) error {
	log := logging.FromContext(ctx).WithValues("lease", v1alpha1.AgentLeaseName(l.nodeName))
	ticker := l.clock.NewTicker(l.renewInterval)
	defer ticker.Stop()
	for {
		if err := l.Renew(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Error(err, "Lease renewal failed")
		} else {
			log.V(logging.Debug).Info("Lease renewed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}
