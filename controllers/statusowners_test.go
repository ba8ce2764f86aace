// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/apply"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/fakeagent"
)

// TestStatusManagersAreTheTableOwners runs jobs to their end (one whose runs
// pass, one whose run fails on its own, one the controller fails at its
// deadline), then reads the managedFields of every run and job and checks
// every status field's manager against the ownership table: a field written
// by a manager the table does not name for it fails, whichever way it was
// written (an apply or an update).
func TestStatusManagersAreTheTableOwners(t *testing.T) {
	ns := newNamespace(t)
	create(t, builders.MakeQuantRecipe("fp8", ns).Obj())
	t.Run("the agent runs", func(t *testing.T) {
		failing := func(run *kquantv1alpha1.QuantRun) (*kquantv1alpha1.RunResults, error) {
			if run.Spec.JobRef.Name == "fails" {
				return nil, errors.New("the kernel crashed")
			}
			return builders.SyntheticResults("812.5", "12.5", "3.25", "31.5", kquantv1alpha1.VerdictPass), nil
		}
		startAgents(t, agent("owners-a", builders.H100, 2, fakeagent.WithOutcome(failing)))
		create(t, builders.MakeQuantJob("passes", ns).Recipe("fp8").EachGPU().Obj(),
			builders.MakeQuantJob("fails", ns).Recipe("fp8").AnyGPU().BackoffLimit(0).Obj())
		waitForPhase(t, ns, "passes", kquantv1alpha1.JobPhaseSucceeded)
		waitForPhase(t, ns, "fails", kquantv1alpha1.JobPhaseFailed)
	})
	t.Run("the controller fails runs", func(t *testing.T) {
		startAgents(t, agent("owners-slow", builders.H100, 1, fakeagent.WithRunDuration(time.Hour)))
		create(t, builders.MakeQuantJob("slow", ns).Recipe("fp8").EachGPU().ActiveDeadline(2*time.Second).Obj())
		waitForPhase(t, ns, "slow", kquantv1alpha1.JobPhaseFailed)
		eventually(t, "the slow run to be failed", func() (bool, string) {
			runs := runsOf(t, ns, "slow")
			return len(runs) == 1 && runs[0].Status.Phase == kquantv1alpha1.RunPhaseFailed, fmt.Sprintf("%d runs", len(runs))
		})
	})

	runs := &kquantv1alpha1.QuantRunList{}
	if err := s.client.List(t.Context(), runs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, run := range runs.Items {
		for field, managers := range statusManagers(t, run.ManagedFields) {
			for _, m := range managers {
				seen[m] = true
				if !apply.Owns(m, field) {
					t.Errorf("run %s: status.%s is written by %q; apply.QuantRunStatusOwners gives it to %v",
						run.Name, field, m, apply.QuantRunStatusOwners()[field])
				}
			}
		}
	}
	// Both sides wrote, or the test proved nothing about one of them.
	for _, m := range []string{apply.ManagerAgent, apply.ManagerController} {
		if !seen[m] {
			t.Errorf("no run status field is managed by %s; managers seen: %v", m, seen)
		}
	}
	for _, name := range []string{"passes", "fails", "slow"} {
		job := getJob(t, ns, name)
		for field, managers := range statusManagers(t, job.ManagedFields) {
			if !slices.Equal(managers, []string{apply.ManagerController}) {
				t.Errorf("job %s: status.%s is written by %v; only %s writes job status", name, field, managers, apply.ManagerController)
			}
		}
	}
}

// statusManagers returns, for each top-level status field that entries
// record, the managers that own it.
func statusManagers(t *testing.T, entries []metav1.ManagedFieldsEntry) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, e := range entries {
		if e.FieldsV1 == nil {
			continue
		}
		var fields map[string]map[string]json.RawMessage
		if err := json.Unmarshal(e.FieldsV1.GetRawBytes(), &fields); err != nil {
			t.Fatalf("decoding managedFields of %s: %v", e.Manager, err)
		}
		for f := range fields["f:status"] {
			name, ok := strings.CutPrefix(f, "f:")
			if !ok {
				continue
			}
			manager := e.Manager
			if e.Operation != metav1.ManagedFieldsOperationApply {
				// An update is no writer of the table, whatever its manager.
				manager = fmt.Sprintf("%s (%s)", e.Manager, e.Operation)
			}
			if !slices.Contains(out[name], manager) {
				out[name] = append(out[name], manager)
			}
		}
	}
	return out
}
