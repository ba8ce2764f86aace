// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/quantrun"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/fakeagent"
)

// In in-agent mode (this suite's manager runs no run pods), a node whose
// agent stops renewing its Lease loses its running run (NodeLost, a
// disruption); the run is retried on another node without using
// backoffLimit, and the job still completes.
func TestNodeLostRunIsRetriedElsewhere(t *testing.T) {
	ns := newNamespace(t)
	// lost-a sorts first, so the deterministic tie-break binds the run there;
	// its runs never finish on their own.
	doomed := agent("lost-a", builders.H100, 1, fakeagent.WithLeaseDuration(2*time.Second), fakeagent.WithRunDuration(time.Hour))
	healthy := agent("lost-b", builders.H100, 1, fakeagent.WithLeaseDuration(2*time.Second))
	startAgents(t, doomed, healthy)
	create(t, builders.MakeQuantRecipe("fp8", ns).Obj(), builders.MakeQuantJob("survivor", ns).Recipe("fp8").AnyGPU().BackoffLimit(0).Obj())

	first := quantrun.Name("survivor", 0, 0)
	eventually(t, "the first attempt to run on lost-a", func() (bool, string) {
		runs := runsOf(t, ns, "survivor")
		return len(runs) == 1 && runs[0].Spec.NodeName == "lost-a" && runs[0].Status.Phase == kquantv1alpha1.RunPhaseRunning, fmt.Sprintf("%d runs", len(runs))
	})
	doomed.Stop()

	job := waitForPhase(t, ns, "survivor", kquantv1alpha1.JobPhaseSucceeded)
	if job.Status.Failed != 0 || job.Status.Disruptions != 1 || job.Status.Progress != "1/1" {
		t.Errorf("failed %d disruptions %d progress %q, want 0, 1 and 1/1", job.Status.Failed, job.Status.Disruptions, job.Status.Progress)
	}
	byName := map[string]kquantv1alpha1.QuantRun{}
	for _, r := range runsOf(t, ns, "survivor") {
		byName[r.Name] = r
	}
	if r := byName[first]; r.Status.Phase != kquantv1alpha1.RunPhaseFailed || r.Status.Reason != kquantv1alpha1.ReasonNodeLost {
		t.Errorf("run %s: %s/%s %q, want Failed/NodeLost", first, r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	retry := byName[quantrun.Name("survivor", 0, 1)]
	if retry.Spec.NodeName != "lost-b" || retry.Status.Phase != kquantv1alpha1.RunPhaseSucceeded || retry.Spec.Attempt != 1 {
		t.Errorf("retry %s on %q %s attempt %d, want Succeeded on lost-b attempt 1", retry.Name, retry.Spec.NodeName, retry.Status.Phase, retry.Spec.Attempt)
	}
	if retry.Status.BindTime == nil || retry.Status.StartTime == nil || retry.Status.AgentID == "" {
		t.Errorf("retry status lost fields of one of its writers: %+v", retry.Status)
	}
}

// activeDeadlineSeconds fails the job and its active runs.
func TestActiveDeadlineFailsJobAndRuns(t *testing.T) {
	ns := newNamespace(t)
	startAgents(t, agent("deadline-a", builders.H100, 2, fakeagent.WithRunDuration(time.Hour)))
	create(t, builders.MakeQuantRecipe("fp8", ns).Obj(),
		builders.MakeQuantJob("slow", ns).Recipe("fp8").EachGPU().ActiveDeadline(2*time.Second).Obj())

	job := waitForPhase(t, ns, "slow", kquantv1alpha1.JobPhaseFailed)
	if c := condition(job.Status.Conditions, kquantv1alpha1.JobConditionFailed); c.Reason != kquantv1alpha1.ReasonDeadlineExceeded {
		t.Errorf("Failed condition %+v, want reason DeadlineExceeded", c)
	}
	if job.Status.CompletionTime == nil {
		t.Error("completionTime not set")
	}
	eventually(t, "every run to be failed with DeadlineExceeded", func() (bool, string) {
		runs := runsOf(t, ns, "slow")
		for _, r := range runs {
			if r.Status.Phase != kquantv1alpha1.RunPhaseFailed || r.Status.Reason != kquantv1alpha1.ReasonDeadlineExceeded {
				return false, fmt.Sprintf("run %s %s/%s", r.Name, r.Status.Phase, r.Status.Reason)
			}
		}
		return len(runs) == 2, fmt.Sprintf("%d runs", len(runs))
	})
}

// A job whose placement needs more runs than placement.maxRuns fails with
// TooManyRuns, naming the limit, before it creates any run.
func TestJobOverMaxRunsFailsWithoutRuns(t *testing.T) {
	ns := newNamespace(t)
	startAgents(t, agent("maxruns-a", builders.H100, 3))
	create(t, builders.MakeQuantRecipe("fp8", ns).Obj(),
		builders.MakeQuantJob("wide", ns).Recipe("fp8").EachGPU().MaxRuns(2).Obj())

	job := waitForPhase(t, ns, "wide", kquantv1alpha1.JobPhaseFailed)
	c := condition(job.Status.Conditions, kquantv1alpha1.JobConditionFailed)
	if c.Reason != kquantv1alpha1.ReasonTooManyRuns || !strings.Contains(c.Message, "needs 3 runs, more than spec.placement.maxRuns (2)") {
		t.Errorf("Failed condition %+v, want reason TooManyRuns naming 3 runs and spec.placement.maxRuns (2)", c)
	}
	if runs := runsOf(t, ns, "wide"); len(runs) != 0 {
		t.Errorf("%d runs created, want none", len(runs))
	}
}

// A job whose workload breaks its recipe's group alignment is refused by
// the API server when its runs are created (QuantRunSpec's CEL rule, which
// knows the recipe); the job fails RecipeInvalid with the API server's
// message instead of retrying the create.
func TestJobWhoseRunsTheAPIServerRefusesFails(t *testing.T) {
	ns := newNamespace(t)
	startAgents(t, agent("aligned-a", builders.H100, 1))
	job := builders.MakeQuantJob("misaligned", ns).Recipe("mxfp8").Obj()
	job.Spec.Workload.Operation = kquantv1alpha1.OperationGroupedQuantize
	job.Spec.Workload.Shapes = []kquantv1alpha1.Shape{{Rows: 96, Cols: 64}}
	job.Spec.Workload.Groups = &kquantv1alpha1.Groups{Count: 2, Splits: kquantv1alpha1.SplitExplicit, Sizes: []int64{48, 48}}
	create(t, builders.MakeQuantRecipe("mxfp8", ns).Scheme(kquantv1alpha1.SchemeMXFP8BlockScaling).Obj(), job)

	got := waitForPhase(t, ns, "misaligned", kquantv1alpha1.JobPhaseFailed)
	c := condition(got.Status.Conditions, kquantv1alpha1.JobConditionFailed)
	if c.Reason != kquantv1alpha1.ReasonRecipeInvalid || !strings.Contains(c.Message, "spec.workload.groups.sizes") {
		t.Errorf("Failed condition %+v, want reason RecipeInvalid naming spec.workload.groups.sizes", c)
	}
	if runs := runsOf(t, ns, "misaligned"); len(runs) != 0 {
		t.Errorf("%d runs created, want none", len(runs))
	}
}

// ttlSecondsAfterFinished deletes the job and its runs.
func TestTTLDeletesFinishedJobAndRuns(t *testing.T) {
	ns := newNamespace(t)
	startAgents(t, agent("ttl-a", builders.H100, 2))
	create(t, builders.MakeQuantRecipe("fp8", ns).Obj(),
		// completionTime has a resolution of one second, so a TTL of 1 s can
		// delete the job before the test has seen it finish.
		builders.MakeQuantJob("short-lived", ns).Recipe("fp8").EachGPU().TTLAfterFinished(5*time.Second).Obj())

	job := waitForPhase(t, ns, "short-lived", kquantv1alpha1.JobPhaseSucceeded)
	waitGone(t, job)
	eventually(t, "the job's runs to be deleted", func() (bool, string) {
		n := len(runsOf(t, ns, "short-lived"))
		return n == 0, fmt.Sprintf("%d runs left", n)
	})
}

// Failed runs are retried up to backoffLimit, then the job fails.
func TestBackoffLimitFailsJob(t *testing.T) {
	ns := newNamespace(t)
	broken := fakeagent.WithOutcome(func(*kquantv1alpha1.QuantRun) (*kquantv1alpha1.RunResults, error) {
		return nil, errors.New("CUDA_ERROR_ILLEGAL_ADDRESS")
	})
	startAgents(t, agent("backoff-a", builders.H100, 2, broken))
	create(t, builders.MakeQuantRecipe("fp8", ns).Obj(), builders.MakeQuantJob("doomed", ns).Recipe("fp8").BackoffLimit(1).Obj())

	job := waitForPhase(t, ns, "doomed", kquantv1alpha1.JobPhaseFailed)
	if c := condition(job.Status.Conditions, kquantv1alpha1.JobConditionFailed); c.Reason != kquantv1alpha1.ReasonBackoffLimitExceeded {
		t.Errorf("Failed condition %+v, want reason BackoffLimitExceeded", c)
	}
	runs := runsOf(t, ns, "doomed")
	if job.Status.Failed != 2 || len(runs) != 2 {
		t.Errorf("failed %d with %d runs, want 2 and 2 (first try and one retry)", job.Status.Failed, len(runs))
	}
	if len(runs) == 2 && runs[0].Spec.GPUUUID == runs[1].Spec.GPUUUID {
		t.Errorf("retry ran on the GPU that failed (%s), want the other one", runs[0].Spec.GPUUUID)
	}
}

// A deleted job leaves no runs behind, even without a garbage collector.
func TestDeletedJobLeavesNoOrphans(t *testing.T) {
	ns := newNamespace(t)
	startAgents(t, agent("orphan-a", builders.H100, 4, fakeagent.WithRunDuration(time.Hour)))
	job := builders.MakeQuantJob("gone", ns).Recipe("fp8").EachGPU().Obj()
	create(t, builders.MakeQuantRecipe("fp8", ns).Obj(), job)
	waitForPhase(t, ns, "gone", kquantv1alpha1.JobPhaseRunning)
	if err := s.client.Delete(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the runs to be deleted", func() (bool, string) {
		n := len(runsOf(t, ns, "gone"))
		return n == 0, fmt.Sprintf("%d runs left", n)
	})
}

// A job whose recipe does not exist waits with reason RecipeNotFound and
// starts when the recipe appears.
func TestMissingRecipeWaitsThenRuns(t *testing.T) {
	ns := newNamespace(t)
	startAgents(t, agent("norecipe-a", builders.H100, 1))
	create(t, builders.MakeQuantJob("early", ns).Recipe("late").Obj())
	eventually(t, "reason RecipeNotFound", func() (bool, string) {
		job := getJob(t, ns, "early")
		c := condition(job.Status.Conditions, kquantv1alpha1.JobConditionScheduled)
		return c.Reason == kquantv1alpha1.ReasonRecipeNotFound && job.Status.Phase == kquantv1alpha1.JobPhasePending, fmt.Sprintf("%s %+v", job.Status.Phase, c)
	})
	create(t, builders.MakeQuantRecipe("late", ns).Obj())
	waitForPhase(t, ns, "early", kquantv1alpha1.JobPhaseSucceeded)
}

// A job whose workload asks a row-scaled NVFP4 input for its columnwise
// operand (usage Both, the default), which TransformerEngine does not
// produce, fails at once instead of failing every run.
func TestRowScaledInputsWithBothUsagesFail(t *testing.T) {
	ns := newNamespace(t)
	startAgents(t, agent("rowscaled-a", builders.B200, 1))
	recipe := builders.MakeQuantRecipe("rowscaled", ns).NVFP4().Obj()
	off, on := false, true
	recipe.Spec.NVFP4 = &kquantv1alpha1.NVFP4Options{RandomHadamardTransform: &off, RowScaledActivation: &on}
	create(t, recipe, builders.MakeQuantJob("both", ns).Recipe("rowscaled").Obj())

	job := waitForPhase(t, ns, "both", kquantv1alpha1.JobPhaseFailed)
	c := condition(job.Status.Conditions, kquantv1alpha1.JobConditionFailed)
	if c.Reason != kquantv1alpha1.ReasonRecipeInvalid || !strings.Contains(c.Message, "spec.workload.usage") {
		t.Errorf("Failed condition %+v, want reason RecipeInvalid naming spec.workload.usage", c)
	}
	if runs := runsOf(t, ns, "both"); len(runs) != 0 {
		t.Errorf("%d runs created, want none", len(runs))
	}
}
