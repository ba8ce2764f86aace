// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package crd

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kquant/kquant/internal/quant"
)

// TestRunRuleKeepsTheEngineGroupAlignment: QuantRunSpec's CEL rule on
// explicit group sizes and the engine's quant.Scheme.GroupAlignment state
// one alignment per scheme; this holds them to each other for every scheme.
func TestRunRuleKeepsTheEngineGroupAlignment(t *testing.T) {
	s, err := Load("quantruns", "v1alpha1")
	if err != nil {
		t.Fatal(err)
	}
	for _, scheme := range quant.Schemes() {
		align := int64(scheme.GroupAlignment())
		for _, tc := range []struct {
			sizes []any
			valid bool
		}{
			{[]any{align, 2 * align}, true},
			{[]any{align, int64(0)}, true},
			{[]any{align, align / 2}, false},
			{[]any{align + 8, align - 8}, false},
		} {
			t.Run(fmt.Sprintf("%s %v", scheme, tc.sizes), func(t *testing.T) {
				var rows int64
				for _, n := range tc.sizes {
					rows += n.(int64)
				}
				run := map[string]any{
					"apiVersion": "kquant.dev/v1alpha1", "kind": "QuantRun",
					"metadata": map[string]any{"name": "r", "namespace": "ns"},
					"spec": map[string]any{
						"jobRef":    map[string]any{"name": "j", "uid": "u"},
						"recipe":    map[string]any{"name": "r", "spec": map[string]any{"scheme": string(scheme)}},
						"mode":      "Validation",
						"execution": map[string]any{},
						"workload": map[string]any{
							"operation": "GroupedQuantize",
							"shapes":    []any{map[string]any{"rows": rows, "cols": int64(64)}},
							"groups":    map[string]any{"count": int64(len(tc.sizes)), "splits": "Explicit", "sizes": tc.sizes},
						},
					},
				}
				s.Default(run)
				errs := s.Validate(context.Background(), run)
				switch {
				case tc.valid && len(errs) > 0:
					t.Errorf("refused: %v", errs.ToAggregate())
				case !tc.valid && len(errs) == 0:
					t.Error("admitted")
				case !tc.valid && !strings.Contains(errs.ToAggregate().Error(), "spec.workload.groups.sizes"):
					t.Errorf("refusal does not name spec.workload.groups.sizes: %v", errs.ToAggregate())
				}
			})
		}
	}
}
