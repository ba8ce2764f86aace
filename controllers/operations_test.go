// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"fmt"
	"testing"

	dto "github.com/prometheus/client_model/go"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
)

// metric returns the value of the series name{labels} in the suite's registry
// (a counter's or gauge's value, a histogram's count), and whether it exists.
func metric(t *testing.T, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	families, err := s.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue series
				}
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				return m.GetCounter().GetValue(), true
			case dto.MetricType_GAUGE:
				return m.GetGauge().GetValue(), true
			case dto.MetricType_HISTOGRAM:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

// Metrics count runs by phase and scheduling latency, and the gauges follow
// the cache; Events tell the job's story.
func TestMetricsAndEvents(t *testing.T) {
	ns := newNamespace(t)
	startAgents(t, agent("ops-a", builders.H100, 2))
	create(t,
		builders.MakeQuantRecipe("fp8", ns).Obj(),
		builders.MakeQuantRecipe("nvfp4", ns).NVFP4().Obj(),
		builders.MakeQuantJob("ok", ns).Recipe("fp8").EachGPU().Obj(),
		builders.MakeQuantJob("never", ns).Recipe("nvfp4").RequireNative().Obj(),
	)
	waitForPhase(t, ns, "ok", kquantv1alpha1.JobPhaseSucceeded)
	waitForPhase(t, ns, "never", kquantv1alpha1.JobPhaseUnschedulable)

	eventually(t, "metrics", func() (bool, string) {
		succeeded, _ := metric(t, "kquant_runs_total", map[string]string{"phase": "Succeeded"})
		bound, _ := metric(t, "kquant_runs_total", map[string]string{"phase": "Bound"})
		latency, _ := metric(t, "kquant_run_scheduling_latency_seconds", nil)
		unschedulable, ok1 := metric(t, "kquant_jobs_unschedulable", nil)
		_, ok2 := metric(t, "kquant_runs_pending", nil)
		return succeeded >= 2 && bound >= 2 && latency >= 2 && unschedulable >= 1 && ok1 && ok2,
			fmt.Sprintf("succeeded %v bound %v latency samples %v unschedulable %v pending gauge %v", succeeded, bound, latency, unschedulable, ok2)
	})

	eventually(t, "events", func() (bool, string) {
		list := &eventsv1.EventList{}
		if err := s.client.List(t.Context(), list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		reasons := map[string]bool{}
		for _, e := range list.Items {
			reasons[e.Regarding.Kind+"/"+e.Reason] = true
		}
		// A job whose runs are created bound reports Running in its RunsCreated
		// event, so QuantJob/Running is not required here.
		for _, want := range []string{"QuantJob/RunsCreated", "QuantJob/Completed", "QuantJob/Unschedulable"} {
			if !reasons[want] {
				return false, fmt.Sprintf("no %s event in %v", want, reasons)
			}
		}
		// A binding is no Event of its own: the job's events report its runs.
		if reasons["QuantRun/Bound"] {
			return false, fmt.Sprintf("a QuantRun/Bound event in %v", reasons)
		}
		return true, ""
	})
}
