// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/apply"
	ac "github.com/kquant/kquant/api/v1alpha1/applyconfiguration/api/v1alpha1"
)

// Publisher writes one node's GPUNodeProfile.
type Publisher struct {
	client   client.Client
	nodeName string
}

// NewPublisher returns a publisher for node nodeName. c should be a direct
// (uncached) client: the agent must not watch every Node of the cluster to
// read its own.
func NewPublisher(c client.Client, nodeName string) *Publisher {
	return &Publisher{client: c, nodeName: nodeName}
}

// Publish applies the profile's metadata (creating it when missing) and then
// its status, both under FieldManager, both typed apply configurations.
func (p *Publisher) Publish(ctx context.Context, status v1alpha1.GPUNodeProfileStatus) error {
	owner, err := p.nodeOwner(ctx)
	if err != nil {
		return err
	}
	meta := ac.GPUNodeProfile(p.nodeName)
	if owner != nil {
		meta.WithOwnerReferences(owner)
	}
	if err := p.client.Apply(ctx, meta, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying GPUNodeProfile %s: %w", p.nodeName, err)
	}
	profile := &v1alpha1.GPUNodeProfile{ObjectMeta: metav1.ObjectMeta{Name: p.nodeName}}
	_, err = apply.GPUNodeProfileStatus(ctx, p.client, profile, &status)
	return err
}

// nodeOwner returns an owner reference to the Node, nil when the Node does
// not exist (simulated nodes, tests): the profile must still be published.
func (p *Publisher) nodeOwner(ctx context.Context) (*metav1ac.OwnerReferenceApplyConfiguration, error) {
	node := &corev1.Node{}
	err := p.client.Get(ctx, client.ObjectKey{Name: p.nodeName}, node)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading Node %s: %w", p.nodeName, err)
	}
	// Not a controller reference: the Node does not manage the profile.
	return metav1ac.OwnerReference().WithAPIVersion("v1").WithKind("Node").WithName(node.Name).WithUID(node.UID).
		WithBlockOwnerDeletion(false), nil
}
