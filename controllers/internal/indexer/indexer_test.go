// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package indexer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
)

func TestExtractors(t *testing.T) {
	pending := builders.MakeQuantRun("j-0-0", "ns", "j").Phase("").Obj()
	bound := builders.MakeQuantRun("j-1-0", "ns", "j").Bound("a", 3).Obj()
	done := builders.MakeQuantRun("j-2-0", "ns", "j").Bound("a", 4).Phase(kquantv1alpha1.RunPhaseSucceeded).Obj()
	job := builders.MakeQuantJob("j", "ns").Recipe("r").Obj()
	cases := map[string]struct {
		extract client.IndexerFunc
		obj     client.Object
		want    []string
	}{
		"run by job":                    {RunJob, pending, []string{"j"}},
		"unbound run has no node":       {RunNode, pending, nil},
		"bound run by node":             {RunNode, bound, []string{"a"}},
		"finished run keeps its node":   {RunNode, done, []string{"a"}},
		"active run holds its GPU":      {RunActiveGPU, bound, []string{"GPU-a-3"}},
		"finished run frees its GPU":    {RunActiveGPU, done, nil},
		"unbound run holds no GPU":      {RunActiveGPU, pending, nil},
		"unset phase indexes Pending":   {RunPhase, pending, []string{"Pending"}},
		"job by recipe":                 {JobRecipe, job, []string{"r"}},
		"new job indexes Pending":       {JobPhase, job, []string{"Pending"}},
		"wrong type extracts nothing":   {RunJob, job, nil},
		"wrong type extracts no recipe": {JobRecipe, pending, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.extract(tc.obj)); diff != "" {
				t.Errorf("extractor mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
