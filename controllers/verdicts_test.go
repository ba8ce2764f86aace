// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/fakeagent"
)

// failOnGPU1 gives GPU 1 of every node an SNR below tolerance (verdict Fail)
// and the others a Pass, each with its own host time.
func failOnGPU1(run *kquantv1alpha1.QuantRun) (*kquantv1alpha1.RunResults, error) {
	idx := *run.Spec.GPUIndex
	eager := fmt.Sprintf("%d.5", 9+idx) // 9.5, 10.5, 11.5: text order differs from numeric
	if idx == 1 {
		return builders.SyntheticResults("700", eager, "3.25", "12", kquantv1alpha1.VerdictFail), nil
	}
	return builders.SyntheticResults("812.5", eager, "3.25", "31.5", kquantv1alpha1.VerdictPass), nil
}

// A job whose runs fail their tolerances finishes (Succeeded: every run gave
// a verdict) but does not pass: the Passed condition carries the worst
// verdict, the completion event the counts, and the API server renders the
// measured numbers as numbers.
func TestFinishedIsNotPassed(t *testing.T) {
	ns := newNamespace(t)
	startAgents(t, agent("verdict-a", builders.H100, 3, fakeagent.WithOutcome(failOnGPU1), fakeagent.WithRunDuration(20*time.Millisecond)))
	create(t, builders.MakeQuantRecipe("fp8", ns).Obj(),
		builders.MakeQuantJob("mixed", ns).Recipe("fp8").EachGPU().MinSNRdB("20").Obj())

	job := waitForPhase(t, ns, "mixed", kquantv1alpha1.JobPhaseSucceeded)
	passed := condition(job.Status.Conditions, kquantv1alpha1.JobConditionPassed)
	if passed.Status != metav1.ConditionFalse || passed.Reason != string(kquantv1alpha1.VerdictFail) || !strings.Contains(passed.Message, "2 Pass, 1 Fail") {
		t.Errorf("Passed = %+v, want False with reason Fail and the counts", passed)
	}
	if v := job.Status.Summary.Verdicts; v != (kquantv1alpha1.VerdictCounts{Pass: 2, Fail: 1}) {
		t.Errorf("verdicts = %+v, want 2 Pass 1 Fail", v)
	}
	if complete := condition(job.Status.Conditions, kquantv1alpha1.JobConditionComplete); strings.Contains(complete.Message, "succeeded") {
		t.Errorf("Complete says %q: runs that failed their tolerances did not succeed", complete.Message)
	}

	eventually(t, "completion event", func() (bool, string) {
		list := &eventsv1.EventList{}
		if err := s.client.List(t.Context(), list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, e := range list.Items {
			if e.Regarding.Name == "mixed" && e.Reason == "Completed" {
				ok := e.Type == "Warning" && e.Note == "3 runs finished: 2 Pass, 1 Fail, 0 Warn, 0 Skip"
				return ok, fmt.Sprintf("Completed event %s %q", e.Type, e.Note)
			}
		}
		return false, "no Completed event"
	})

	// Per-GPU series, labelled as dcgm-exporter labels its own, in base units.
	gpu := func(i int, extra map[string]string) map[string]string {
		l := map[string]string{"hostname": "verdict-a", "UUID": builders.GPUUUID("verdict-a", i), "gpu": fmt.Sprint(i), "modelName": builders.H100.Name,
			"quantjob": ns + "/mixed", "recipe": "fp8", "scheme": string(kquantv1alpha1.SchemeFloat8CurrentScaling), "mode": "Validation"}
		for k, v := range extra {
			l[k] = v
		}
		return l
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"kquant_gpu_verdict", gpu(1, map[string]string{"verdict": "Fail"}), 1},
		{"kquant_gpu_verdict", gpu(1, map[string]string{"verdict": "Pass"}), 0},
		{"kquant_gpu_verdict", gpu(0, map[string]string{"verdict": "Pass"}), 1},
		{"kquant_gpu_bandwidth_bytes_per_second", gpu(1, nil), 700e9},
		{"kquant_gpu_host_eager_seconds", gpu(2, nil), 11.5e-6},
		{"kquant_gpu_snr_decibels", gpu(0, nil), 31.5},
		{"kquant_gpu_recipe_support", map[string]string{"hostname": "verdict-a", "UUID": builders.GPUUUID("verdict-a", 0), "gpu": "0",
			"modelName": builders.H100.Name, "scheme": string(kquantv1alpha1.SchemeFloat8CurrentScaling), "support": "Native"}, 1},
	} {
		if got, ok := metric(t, tc.name, tc.labels); !ok || got != tc.want {
			t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
	success := map[string]string{"hostname": "verdict-a", "gpu": "0", "modelName": builders.H100.Name, "recipe": "fp8", "scheme": string(kquantv1alpha1.SchemeFloat8CurrentScaling)}
	success["UUID"] = builders.GPUUUID("verdict-a", 0)
	if ts, ok := metric(t, "kquant_gpu_last_success_timestamp_seconds", success); !ok || ts < float64(job.CreationTimestamp.Unix()) {
		t.Errorf("last success of GPU 0 = %v (found %v), want after the job's creation", ts, ok)
	}
	success["UUID"], success["gpu"] = builders.GPUUUID("verdict-a", 1), "1"
	if _, ok := metric(t, "kquant_gpu_last_success_timestamp_seconds", success); ok {
		t.Error("GPU 1 never passed, yet has a last success")
	}

	// The table the API server sends kubectl: PASS/FAIL/WARN as integers,
	// the measured numbers as numbers (a decimal string would be an empty cell).
	jobRow := tableRow(t, ns, "quantjobs", "mixed")
	for col, want := range map[string]any{"Pass": 2.0, "Fail": 1.0, "Warn": 0.0, "Eager-us": 10.5, "SNR-dB": 31.5} {
		if got := jobRow[col]; got != want {
			t.Errorf("quantjob column %s = %#v, want %#v", col, got, want)
		}
	}
	for _, r := range runsOf(t, ns, "mixed") {
		row := tableRow(t, ns, "quantruns", r.Name)
		want := float64(9+*r.Spec.GPUIndex) + 0.5
		if got := row["Eager-us"]; got != want {
			t.Errorf("quantrun %s column Eager-us = %#v, want %v", r.Name, got, want)
		}
	}
}

// tableRow asks the API server for name as a Table (what kubectl get prints)
// and returns its cells by column name (JSON numbers decode as float64).
func tableRow(t *testing.T, ns, resource, name string) map[string]any {
	t.Helper()
	cfg := rest.CopyConfig(s.env.Config)
	cfg.GroupVersion = &kquantv1alpha1.GroupVersion
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(s.env.Scheme).WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := rc.Get().Namespace(ns).Resource(resource).Name(name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("table of %s %s: %v", resource, name, err)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(raw, table); err != nil {
		t.Fatalf("table of %s %s: %v", resource, name, err)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("table of %s %s has %d rows", resource, name, len(table.Rows))
	}
	out := map[string]any{}
	for i, c := range table.ColumnDefinitions {
		out[c.Name] = table.Rows[0].Cells[i]
	}
	return out
}
