// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package scheme builds the runtime.Scheme that every kquant binary and test
// talks to the API server with: the built-in Kubernetes kinds and kquant's.
// It lives apart from api/v1alpha1 so that importing the API types does not
// pull in every built-in API group.
package scheme

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// New returns a scheme with the built-in kinds and kquant's.
func New() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding client-go kinds to the scheme: %w", err)
	}
	if err := kquantv1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding kquant kinds to the scheme: %w", err)
	}
	return s, nil
}

// NewClient returns a direct (uncached) client of cfg's API server that
// speaks the kinds of New: what a binary uses for reads and writes that a
// manager's cache should not serve.
func NewClient(cfg *rest.Config) (client.Client, error) {
	s, err := New()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("creating API client: %w", err)
	}
	return c, nil
}
