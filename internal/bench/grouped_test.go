// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/quant/reference"
)

func TestGroupedAlignmentViolationNamesTheGroup(t *testing.T) {
	spec := testSpec(v1alpha1.SchemeMXFP8BlockScaling, v1alpha1.OperationGroupedQuantize, shape(128, 64))
	spec.Workload.Groups = &v1alpha1.Groups{Count: 3, Splits: v1alpha1.SplitExplicit, Sizes: []int64{64, 40, 24}}
	rep, err := (&Engine{Backend: reference.New()}).Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Results
	if res.Verdict != v1alpha1.VerdictFail || res.Reason != v1alpha1.VerdictReasonAlignmentViolation {
		t.Fatalf("verdict %s %s", res.Verdict, res.Reason)
	}
	if !strings.Contains(rep.Message, "group 1 has 40 rows") {
		t.Errorf("message %q does not name group 1", rep.Message)
	}
	if res.Accuracy != nil || res.Shapes[0].Accuracy != nil {
		t.Errorf("a shape that did not run has accuracy")
	}
}

func TestGroupedDelayedScalingKeepsOneStatePerGroup(t *testing.T) {
	spec := testSpec(v1alpha1.SchemeDelayedScaling, v1alpha1.OperationGroupedQuantize, shape(256, 32))
	spec.Workload.Groups = &v1alpha1.Groups{Count: 5, Splits: v1alpha1.SplitRandom, Seed: 9}
	spec.Mode = v1alpha1.JobModeBenchmark
	var arts *ShapeArtifacts
	obs := observerFunc(func(_ context.Context, a *ShapeArtifacts) error {
		copied := *a
		arts = &copied
		return nil
	})
	rep, err := (&Engine{Backend: reference.New(), Observer: obs}).Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Results.Verdict != v1alpha1.VerdictPass {
		t.Errorf("verdict %s %s: %s", rep.Results.Verdict, rep.Results.Reason, rep.Message)
	}
	if len(arts.Splits) != 5 || len(arts.Tensors) != 5 {
		t.Fatalf("splits %v, %d tensors", arts.Splits, len(arts.Tensors))
	}
	sum := 0
	for g, n := range arts.Splits {
		if n%16 != 0 {
			t.Errorf("group %d has %d rows", g, n)
		}
		if arts.Tensors[g].RowOffset != sum || arts.Tensors[g].Name != "group-"+string(rune('0'+g)) {
			t.Errorf("group %d: offset %d name %q", g, arts.Tensors[g].RowOffset, arts.Tensors[g].Name)
		}
		sum += n
	}
	if sum != 256 {
		t.Errorf("splits add up to %d", sum)
	}
}
