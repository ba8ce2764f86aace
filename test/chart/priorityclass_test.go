// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package chart

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kquant/kquant/domain/runpod"
)

// TestShippedPriorityClassesAreTheManagers: the chart and config/manager
// ship the run pods' PriorityClasses so that an install has them before the
// first run; the manager creates them from domain/runpod when missing. The
// shipped ones must be what the manager would create (value, preemption
// policy, default, description), or a run pod's priority would depend on
// how kquant was installed.
func TestShippedPriorityClassesAreTheManagers(t *testing.T) {
	want := map[string]*schedulingv1.PriorityClass{}
	for _, pc := range []*schedulingv1.PriorityClass{runpod.PriorityClass(""), runpod.IdlePriorityClass("")} {
		want[pc.Name] = pc
	}
	_, chartObjs := render(t, "kquant", "kquant-system")
	kustomize, err := os.ReadFile(filepath.Join(tl.root, "config", "manager", "priorityclass.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	configObjs, err := parseObjects(kustomize)
	if err != nil {
		t.Fatal(err)
	}
	for source, objs := range map[string][]*unstructured.Unstructured{"the chart": chartObjs, "config/manager": configObjs} {
		found := 0
		for _, o := range objs {
			if o.GetKind() != "PriorityClass" {
				continue
			}
			got := &schedulingv1.PriorityClass{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, got); err != nil {
				t.Fatal(err)
			}
			w, ok := want[got.Name]
			if !ok {
				t.Errorf("%s ships PriorityClass %s, which the manager does not create", source, got.Name)
				continue
			}
			found++
			type class struct {
				Value            int32
				GlobalDefault    bool
				PreemptionPolicy string
				Description      string
			}
			of := func(pc *schedulingv1.PriorityClass) class {
				c := class{Value: pc.Value, GlobalDefault: pc.GlobalDefault, Description: pc.Description}
				if pc.PreemptionPolicy != nil {
					c.PreemptionPolicy = string(*pc.PreemptionPolicy)
				}
				return c
			}
			if diff := cmp.Diff(of(w), of(got)); diff != "" {
				t.Errorf("%s's PriorityClass %s differs from the manager's (-manager +shipped):\n%s", source, got.Name, diff)
			}
		}
		if found != len(want) {
			t.Errorf("%s ships %d of the manager's %d PriorityClasses", source, found, len(want))
		}
	}
}
