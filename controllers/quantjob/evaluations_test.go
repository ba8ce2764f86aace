// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantjob

import (
	"testing"
	"time"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/scheduling"
)

func TestEvaluationsMemo(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	anyKey := scheduling.RequirementKey(&kquantv1alpha1.QuantRecipeSpec{Scheme: kquantv1alpha1.SchemeFloat8CurrentScaling}, &kquantv1alpha1.Placement{Policy: kquantv1alpha1.PlacementAnyGPU})
	eachKey := scheduling.RequirementKey(&kquantv1alpha1.QuantRecipeSpec{Scheme: kquantv1alpha1.SchemeFloat8CurrentScaling}, &kquantv1alpha1.Placement{Policy: kquantv1alpha1.PlacementEachGPU})
	if anyKey == eachKey || anyKey == "" {
		t.Fatalf("keys %q and %q: want distinct and non-empty", anyKey, eachKey)
	}
	results := newEvaluation([]scheduling.NodeResult{{Node: "a", GPUs: []scheduling.GPU{{Node: "a", UUID: "GPU-a-0"}}}})
	e := newEvaluations()
	if _, ok := e.get(anyKey, t0); ok {
		t.Error("empty memo answered")
	}
	e.put(anyKey, results, t0, e.begin())
	if got, ok := e.get(anyKey, t0.Add(EvaluationTTL)); !ok || len(got.results) != 1 || len(got.eligible) != 1 {
		t.Errorf("within the TTL: %v %v, want the results", got, ok)
	}
	if _, ok := e.get(eachKey, t0); ok {
		t.Error("another requirement was answered")
	}
	if _, ok := e.get(anyKey, t0.Add(EvaluationTTL+time.Millisecond)); ok {
		t.Error("answered after the TTL")
	}
	if _, ok := e.get(anyKey, t0.Add(-time.Second)); ok {
		t.Error("answered for a time before the evaluation")
	}
	e.invalidate()
	if _, ok := e.get(anyKey, t0); ok {
		t.Error("answered after invalidate")
	}
	// A put after the TTL starts a new generation: older keys are gone.
	e.put(anyKey, results, t0, e.begin())
	e.put(eachKey, results, t0.Add(2*EvaluationTTL), e.begin())
	if _, ok := e.get(anyKey, t0.Add(2*EvaluationTTL)); ok {
		t.Error("an old generation's key survived")
	}
	// An evaluation that began before a fleet change read the fleet before
	// it: not kept, so the reconciles that change triggers evaluate afresh.
	began := e.begin()
	e.invalidate()
	e.put(anyKey, results, t0, began)
	if _, ok := e.get(anyKey, t0); ok {
		t.Error("an evaluation from before the latest invalidate was kept")
	}
}
