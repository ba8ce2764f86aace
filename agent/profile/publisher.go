package profile

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/api/v1alpha1"
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
// its status, both under FieldManager.
func (p *Publisher) Publish(ctx context.Context, status v1alpha1.GPUNodeProfileStatus) error {
	owner, err := p.nodeOwner(ctx)
	if err != nil {
		return err
	}
	obj := &v1alpha1.GPUNodeProfile{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "GPUNodeProfile"},
		ObjectMeta: metav1.ObjectMeta{Name: p.nodeName},
	}
	if owner != nil {
		obj.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	ac, err := applyConfiguration(obj)
	if err != nil {
		return err
	}
	if err := p.client.Apply(ctx, ac, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying GPUNodeProfile %s: %w", p.nodeName, err)
	}
	obj.OwnerReferences = nil
	obj.Status = status
	ac, err = applyConfiguration(obj)
	if err != nil {
		return err
	}
	if err := p.client.Status().Apply(ctx, ac, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying GPUNodeProfile %s status: %w", p.nodeName, err)
	}
	return nil
}

// nodeOwner returns an owner reference to the Node, nil when the Node does
// not exist (simulated nodes, tests): the profile must still be published.
func (p *Publisher) nodeOwner(ctx context.Context) (*metav1.OwnerReference, error) {
	node := &corev1.Node{}
	err := p.client.Get(ctx, client.ObjectKey{Name: p.nodeName}, node)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading Node %s: %w", p.nodeName, err)
	}
	return &metav1.OwnerReference{
		APIVersion: "v1",
		Kind:       "Node",
		Name:       node.Name,
		UID:        node.UID,
		// Not a controller reference: the Node does not manage the profile.
		BlockOwnerDeletion: ptr.To(false),
	}, nil
}

// applyConfiguration turns a typed object into an apply configuration. The
// typed structs serialise an empty creationTimestamp as null, which server-
// side apply would record as a field the agent owns; drop it.
func applyConfiguration(obj runtime.Object) (runtime.ApplyConfiguration, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %T for apply: %w", obj, err)
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: m}), nil
}
