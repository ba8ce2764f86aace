// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package executor

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestTransientErrorsAreRetriedPermanentOnesAreNot(t *testing.T) {
	gr := schema.GroupResource{Group: "kquant.dev", Resource: "quantruns"}
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443", Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused (API server restarting)", fmt.Errorf("reading run a/b: %w", refused), true},
		{"server timeout", apierrors.NewServerTimeout(gr, "patch", 1), true},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), true},
		{"service unavailable", apierrors.NewServiceUnavailable("etcd is away"), true},
		{"internal error", apierrors.NewInternalError(errors.New("etcdserver: leader changed")), true},
		{"invalid status", apierrors.NewInvalid(schema.GroupKind{Group: "kquant.dev", Kind: "QuantRun"}, "b", nil), false},
		{"forbidden", apierrors.NewForbidden(gr, "b", errors.New("not your node")), false},
		{"conflict that outlived its retries", apierrors.NewConflict(gr, "b", errors.New("changed")), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := transient(c.err); got != c.want {
				t.Errorf("transient(%v) = %v, want %v", c.err, got, c.want)
			}
		})
	}
}
