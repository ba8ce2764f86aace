// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/reference"
)

// partialBackend is a reference backend that claims to cover only MXFP8, as
// the CUDA backend does while kernels are missing, and fails anything else.
type partialBackend struct{ quant.Backend }

func (partialBackend) Name() string { return "partial" }

func (partialBackend) Covers(r quant.Recipe, _ quant.TensorRole) error {
	if r.Scheme != quant.MXFP8BlockScaling {
		return errors.New("scheme " + string(r.Scheme) + " not yet implemented")
	}
	return nil
}

func (p partialBackend) Quantize(ctx context.Context, req quant.Request, x quant.Tensor) (*quant.Result, error) {
	if p.Covers(req.Recipe, req.Role) != nil {
		return nil, errors.New("quantize called for an uncovered recipe")
	}
	return p.Backend.Quantize(ctx, req, x)
}

func TestUncoveredRecipeRunsOnTheReference(t *testing.T) {
	cases := []struct {
		name        string
		scheme      v1alpha1.Scheme
		wantBackend string
		wantMessage string
	}{
		{"covered recipe runs on the backend", v1alpha1.SchemeMXFP8BlockScaling, "partial", ""},
		{"uncovered recipe falls back", v1alpha1.SchemeNVFP4BlockScaling, "reference", "ran on the reference backend (CPU emulation): the partial backend cannot run it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := &Engine{Backend: partialBackend{reference.New()}}
			spec := Spec{
				Recipe:   v1alpha1.QuantRecipeSpec{Scheme: tc.scheme},
				Mode:     v1alpha1.JobModeValidation,
				Workload: v1alpha1.Workload{Shapes: []v1alpha1.Shape{{Rows: 32, Cols: 64}}},
			}
			rep, err := e.Run(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Results.Backend != tc.wantBackend {
				t.Errorf("results.backend = %q, want %q", rep.Results.Backend, tc.wantBackend)
			}
			if !strings.Contains(rep.Message, tc.wantMessage) {
				t.Errorf("message %q does not say %q", rep.Message, tc.wantMessage)
			}
			if e.Backend.Name() != "partial" {
				t.Errorf("the engine's backend was replaced")
			}
		})
	}
}
