// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/fakeagent"
)

// dashboardResults: every GPU steady, except a slow H100 (dash-b GPU 2) and,
// in Validation, an H100 below the SNR tolerance (dash-a GPU 1).
func dashboardResults(run *kquantv1alpha1.QuantRun) (*kquantv1alpha1.RunResults, error) {
	idx := int(*run.Spec.GPUIndex)
	bw, eager, snr, verdict := fmt.Sprintf("81%d.5", idx%3), fmt.Sprintf("12.%d", idx%4), "31.5", kquantv1alpha1.VerdictPass
	if run.Spec.GPUUUID == builders.GPUUUID("dash-b", 2) {
		bw = "610.25"
	}
	if run.Spec.Mode == kquantv1alpha1.JobModeValidation && run.Spec.GPUUUID == builders.GPUUUID("dash-a", 1) {
		snr, verdict = "12.5", kquantv1alpha1.VerdictFail
	}
	if strings.Contains(run.Spec.GPUUUID, "dash-c") {
		bw = fmt.Sprintf("%d", 2900+idx*10)
	}
	return builders.SyntheticResults(bw, eager, "3.25", snr, verdict), nil
}

// TestDashboardData runs a small fleet through a Benchmark and a Validation
// job and writes the manager's metrics (Prometheus text format) to
// $KQUANT_METRICS_OUT, the data of docs/dashboard.png
// (hack/tools/promql, TestDashboardPicture). Skipped without it.
func TestDashboardData(t *testing.T) {
	out := os.Getenv("KQUANT_METRICS_OUT")
	if out == "" {
		t.Skip("KQUANT_METRICS_OUT not set")
	}
	ns := newNamespace(t)
	opts := []fakeagent.Option{fakeagent.WithOutcome(dashboardResults), fakeagent.WithRunDuration(20 * time.Millisecond)}
	startAgents(t, agent("dash-a", builders.H100, 4, opts...), agent("dash-b", builders.H100, 4, opts...), agent("dash-c", builders.B200, 3, opts...))
	create(t, builders.MakeQuantRecipe("fp8", ns).Obj(),
		builders.MakeQuantJob("bench", ns).Recipe("fp8").Benchmark().EachGPU().MaxParallel(16).Obj(),
		builders.MakeQuantJob("validate", ns).Recipe("fp8").EachGPU().MinSNRdB("20").MaxParallel(16).Obj())
	waitForPhase(t, ns, "bench", kquantv1alpha1.JobPhaseSucceeded)
	waitForPhase(t, ns, "validate", kquantv1alpha1.JobPhaseSucceeded)
	families, err := s.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "kquant_") {
			continue
		}
		if _, err := expfmt.MetricFamilyToText(&buf, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
