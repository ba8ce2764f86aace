// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/quantrun"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/fakeagent"
)

// craftedResults gives every GPU steady numbers, except a slow H100 (fleet-b
// GPU 2), an H100 with high host overhead (fleet-a GPU 3) and a slow B200 that
// is not flagged because three B200s are too few to judge.
func craftedResults(run *kquantv1alpha1.QuantRun) (*kquantv1alpha1.RunResults, error) {
	idx := int(*run.Spec.GPUIndex)
	bw, eager := fmt.Sprintf("81%d.5", idx%3), fmt.Sprintf("12.%d", idx%4)
	switch run.Spec.GPUUUID {
	case builders.GPUUUID("fleet-b", 2):
		bw = "610.25"
	case builders.GPUUUID("fleet-a", 3):
		eager = "45.5"
	case builders.GPUUUID("fleet-c", 0):
		bw = "100"
	}
	return builders.SyntheticResults(bw, eager, "3.25", "31.5", kquantv1alpha1.VerdictPass), nil
}

// Outliers are flagged per product on a crafted fleet.
func TestSummaryFlagsOutliers(t *testing.T) {
	ns := newNamespace(t)
	opts := []fakeagent.Option{fakeagent.WithOutcome(craftedResults), fakeagent.WithRunDuration(50 * time.Millisecond)}
	startAgents(t, agent("fleet-a", builders.H100, 4, opts...), agent("fleet-b", builders.H100, 4, opts...), agent("fleet-c", builders.B200, 3, opts...))
	create(t, builders.MakeQuantRecipe("fp8", ns).Obj(),
		builders.MakeQuantJob("fleet-bench", ns).Recipe("fp8").Benchmark().EachGPU().MaxParallel(16).Obj())

	job := waitForPhase(t, ns, "fleet-bench", kquantv1alpha1.JobPhaseSucceeded)
	sum := job.Status.Summary
	if sum == nil {
		t.Fatal("no summary")
	}
	want := []kquantv1alpha1.Outlier{
		{Run: runOn(t, ns, "fleet-bench", "fleet-a", 3), NodeName: "fleet-a", GPUUUID: builders.GPUUUID("fleet-a", 3), Product: builders.H100.Name,
			Metric: "hostEagerMicros", Value: "45.5", Median: "12.15"},
		{Run: runOn(t, ns, "fleet-bench", "fleet-b", 2), NodeName: "fleet-b", GPUUUID: builders.GPUUUID("fleet-b", 2), Product: builders.H100.Name,
			Metric: "bandwidthGBps", Value: "610.25", Median: "810.5"},
	}
	if diff := cmp.Diff(want, sum.Outliers, cmpopts.SortSlices(func(a, b kquantv1alpha1.Outlier) bool { return a.Run < b.Run })); diff != "" {
		t.Errorf("outliers mismatch (-want +got):\n%s", diff)
	}
	if sum.Verdicts.Pass != 11 || job.Status.Progress != "11/11" {
		t.Errorf("verdicts %+v progress %q, want 11 passes and 11/11", sum.Verdicts, job.Status.Progress)
	}
	if sum.BandwidthGBps == nil || sum.BandwidthGBps.Min != "100" || sum.BandwidthGBps.Max != "812.5" {
		t.Errorf("bandwidth %+v, want min 100 max 812.5", sum.BandwidthGBps)
	}
	kubectlGetWide(t, ns)
}

func runOn(t *testing.T, ns, job, node string, gpu int) string {
	t.Helper()
	for _, r := range runsOf(t, ns, job) {
		if r.Spec.GPUUUID == builders.GPUUUID(node, gpu) && r.Status.Phase == kquantv1alpha1.RunPhaseSucceeded {
			return r.Name
		}
	}
	t.Fatalf("no succeeded run of %s on %s GPU %d", job, node, gpu)
	return quantrun.Name(job, -1, -1)
}

// kubectlGetWide writes `kubectl get qj,qrun -o wide` to $KQUANT_KUBECTL_OUT,
// when set, for the documentation.
func kubectlGetWide(t *testing.T, ns string) {
	out := os.Getenv("KQUANT_KUBECTL_OUT")
	if out == "" {
		return
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := s.env.Kubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	var text []byte
	for _, args := range [][]string{{"get", "qr,qj,qrun", "-o", "wide", "-n", ns}, {"get", "gpn"}} {
		b, err := exec.Command(s.env.KubectlPath(), append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v: %s", args, err, b)
		}
		text = append(append(text, "$ kubectl "+fmt.Sprint(args)+"\n"...), b...)
	}
	if err := os.WriteFile(out, text, 0o644); err != nil {
		t.Fatal(err)
	}
}
