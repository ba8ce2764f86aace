// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package hooks_test

import (
	"testing"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/hooks"
)

func TestIsKquantKey(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"kquant.dev/fp8", true},
		{kquantv1alpha1.GateLabelPrefix + "mxfp8", true},
		{"feature.node.kquant.dev/x", true},
		{"nvidia.com/gpu", false},
		{"notkquant.dev/fp8", false},
		{"kquant.dev.example.com/fp8", false},
		{"kquant.dev", false},
		{"team", false},
	} {
		if got := hooks.IsKquantKey(tc.key); got != tc.want {
			t.Errorf("IsKquantKey(%q) = %v, want %v", tc.key, got, tc.want)
		}
	}
}
