// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/api/v1alpha1"
)

// badInputAtRunTime: manifests the API server accepts but no run can do.
// Each fails its run with a message naming the problem, and the agent that
// ran it stays up and runs the next job.
func (s *suite) badInputAtRunTime(t *testing.T) {
	ns := s.namespace(t, "bad-input")
	agent := s.startAgent(t, "e2e-bad-input", "H100:1")
	cases := []struct {
		name, workload string
		wantMessage    []string
	}{
		{
			// 2^40 elements: valid in the API (each side at most 2^20), about
			// 2 TiB of BF16, far beyond an H100's 80 GiB and the host.
			name:        "huge-shape",
			workload:    "{operation: Quantize, shapes: [{rows: 1048576, cols: 1048576}]}",
			wantMessage: []string{"shape too large", "1048576x1048576"},
		},
		{
			// Two explicit group sizes for a 64-row tensor that add up to 48.
			name:        "splits-not-adding-up",
			workload:    "{operation: GroupedQuantize, shapes: [{rows: 64, cols: 64}], groups: {count: 2, splits: Explicit, sizes: [32, 16]}}",
			wantMessage: []string{"sizes add up to 48 rows"},
		},
	}
	for _, c := range cases {
		s.apply(t, ns, fmt.Sprintf(`apiVersion: kquant.dev/v1alpha1
kind: QuantJob
metadata: {name: %s}
spec:
  recipeRef: {name: fp8-current-scaling}
  level: Quick
  backoffLimit: 0
  workload: %s
`, c.name, c.workload))
	}
	for _, c := range cases {
		s.waitJob(t, ns, c.name, v1alpha1.JobPhaseFailed, 2*time.Minute)
		list := &v1alpha1.QuantRunList{}
		if err := s.c.List(t.Context(), list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelJob: c.name}); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 {
			t.Errorf("%s: %d runs, want 1 (backoffLimit 0)", c.name, len(list.Items))
			continue
		}
		r := list.Items[0]
		t.Logf("%s: run %s %s: %s", c.name, r.Name, r.Status.Phase, r.Status.Message)
		for _, w := range c.wantMessage {
			if r.Status.Phase != v1alpha1.RunPhaseFailed || !strings.Contains(r.Status.Message, w) {
				t.Errorf("%s: run %s %s with message %q, want Failed naming %q", c.name, r.Name, r.Status.Phase, r.Status.Message, w)
			}
		}
	}

	// A job applied before its recipe waits with RecipeNotFound, naming the
	// recipe, and starts when the recipe appears.
	s.apply(t, ns, `apiVersion: kquant.dev/v1alpha1
kind: QuantJob
metadata: {name: late-recipe}
spec:
  recipeRef: {name: mxfp8}
  level: Quick
  workload: {operation: Quantize, shapes: [{rows: 128, cols: 256}]}
`)
	eventually(t, time.Minute, "RecipeNotFound", func() error {
		job := &v1alpha1.QuantJob{}
		if err := s.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "late-recipe"}, job); err != nil {
			return err
		}
		c := meta.FindStatusCondition(job.Status.Conditions, v1alpha1.JobConditionScheduled)
		if c == nil || c.Reason != v1alpha1.ReasonRecipeNotFound || !strings.Contains(c.Message, "mxfp8") {
			return fmt.Errorf("Scheduled condition %+v", c)
		}
		return nil
	})
	if _, err := s.cp.kubectl(t.Context(), nil, "apply", "-n", ns, "-f", repoFile("recipes", "mxfp8.yaml")); err != nil {
		t.Fatal(err)
	}
	s.waitJob(t, ns, "late-recipe", v1alpha1.JobPhaseSucceeded, 2*time.Minute)
	if agent.exited() {
		t.Fatalf("the agent exited:\n%s", agent.tail())
	}
	s.checkSettled(t, ns)
}
