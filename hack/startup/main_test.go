// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"testing"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/bench"
	"github.com/kquant/kquant/internal/quant/reference"
)

// TestQuickNVFP4 runs the timed validation on the reference backend: the
// spec is one the API server would admit, and it passes.
func TestQuickNVFP4(t *testing.T) {
	e := &bench.Engine{Backend: reference.New()}
	rep, err := e.Run(context.Background(), quickNVFP4())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Results.Verdict != v1alpha1.VerdictPass {
		t.Errorf("verdict %s (%s), want Pass", rep.Results.Verdict, rep.Message)
	}
}
