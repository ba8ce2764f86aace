// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package fleet

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/scheduling"
)

// NodeMetadata is an empty Node of metadata only: the controllers read and
// watch Nodes through metadata informers, because they need labels only and a
// full Node (images, conditions) is large at a thousand nodes.
func NodeMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	return m
}

// Load returns the state of every node that has a GPUNodeProfile, with its
// agent's Lease from leaseNamespace and its Node's labels.
//
// The states share the cache's objects (no deep copy: a thousand profiles
// were copied for every job reconcile and every binding pass): they are for
// reading only.
func Load(ctx context.Context, r client.Reader, leaseNamespace string) ([]scheduling.NodeState, error) {
	profiles := &kquantv1alpha1.GPUNodeProfileList{}
	if err := r.List(ctx, profiles, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing GPUNodeProfiles: %w", err)
	}
	leases := &coordinationv1.LeaseList{}
	if err := r.List(ctx, leases, client.InNamespace(leaseNamespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing Leases in %s: %w", leaseNamespace, err)
	}
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := r.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing Nodes: %w", err)
	}
	leaseByNode := make(map[string]*coordinationv1.Lease, len(leases.Items))
	for i := range leases.Items {
		if n, ok := scheduling.NodeForLease(leases.Items[i].Name); ok {
			leaseByNode[n] = &leases.Items[i]
		}
	}
	labelsByNode := make(map[string]map[string]string, len(nodes.Items))
	for i := range nodes.Items {
		labelsByNode[nodes.Items[i].Name] = nodes.Items[i].Labels
	}
	out := make([]scheduling.NodeState, len(profiles.Items))
	for i := range profiles.Items {
		p := &profiles.Items[i]
		out[i] = scheduling.NodeState{Profile: p, Lease: leaseByNode[p.Name], Labels: labelsByNode[p.Name]}
	}
	return out, nil
}

// LeaseEvents passes the events of agents' Leases that can change which nodes
// are alive right now: creation, deletion and a renewal after expiry. Routine
// renewals (every 10 s per node) are dropped; expiry is not an event at all, so
// controllers that care requeue at the expiry time.
func LeaseEvents() predicate.TypedPredicate[client.Object] {
	isAgent := func(o client.Object) bool {
		_, ok := scheduling.NodeForLease(o.GetName())
		return ok
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return isAgent(e.Object) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return isAgent(e.Object) },
		GenericFunc: func(e event.GenericEvent) bool { return isAgent(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*coordinationv1.Lease)
			n, ok2 := e.ObjectNew.(*coordinationv1.Lease)
			return ok1 && ok2 && isAgent(n) && scheduling.LeaseRevived(o, n)
		},
	}
}

// NodeLabelsChanged passes Node creation, deletion and label changes: all that
// nodeSelector sees.
func NodeLabelsChanged() predicate.TypedPredicate[client.Object] {
	return predicate.LabelChangedPredicate{}
}
