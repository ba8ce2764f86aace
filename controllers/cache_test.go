// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers"
)

// TestCacheLeavesPreflightRunsOut: a workload's preflight records are
// QuantRuns too, and the manager must never see one (bind it, count it in
// a job, gate on it or export it), whatever its other labels say.
func TestCacheLeavesPreflightRunsOut(t *testing.T) {
	var sel labels.Selector
	for obj, by := range controllers.CacheOptions("kquant-system").ByObject {
		if _, ok := obj.(*kquantv1alpha1.QuantRun); ok {
			sel = by.Label
		}
	}
	if sel == nil {
		t.Fatal("the cache takes every QuantRun")
	}
	cases := []struct {
		name   string
		labels labels.Set
		want   bool
	}{
		{name: "a job's run", labels: labels.Set{kquantv1alpha1.LabelJob: "each-gpu", kquantv1alpha1.LabelNode: "n"}, want: true},
		{name: "an unlabelled run", labels: nil, want: true},
		{name: "a preflight record", labels: labels.Set{kquantv1alpha1.LabelPreflight: "true"}},
		{name: "a preflight record posing as a job's run", labels: labels.Set{kquantv1alpha1.LabelPreflight: "false", kquantv1alpha1.LabelJob: "each-gpu"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := sel.Matches(tc.labels); got != tc.want {
				t.Errorf("cached = %v, want %v", got, tc.want)
			}
		})
	}
}
