// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package execution_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/apply"
	"github.com/kquant/kquant/controllers/execution"
	"github.com/kquant/kquant/domain/runpod"
	"github.com/kquant/kquant/internal/runoutcome"
)

// passing are the results of a passing run, as its run pod measured them.
func passing() *kquantv1alpha1.RunResults {
	return &kquantv1alpha1.RunResults{Backend: "cuda", Verdict: kquantv1alpha1.VerdictPass, Reason: "WithinTolerance",
		Performance: &kquantv1alpha1.Performance{GPUMicros: "12.5", BandwidthGBps: "2900.1"},
		Accuracy:    &kquantv1alpha1.Accuracy{SNRdB: "31.2"}}
}

// exitedWith is the status of a run pod that ended its run with doc and
// exited 1 because its own status write never landed.
func exitedWith(t *testing.T, doc runoutcome.Document) corev1.PodStatus {
	t.Helper()
	msg, err := runoutcome.Encode(doc)
	if err != nil {
		t.Fatal(err)
	}
	return corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
		Name: runpod.ContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 1, Reason: "Error", Message: msg}},
	}}}
}

// statusOwners is which field manager owns each of the given status fields
// of run.
func statusOwners(t *testing.T, run *kquantv1alpha1.QuantRun, fields ...string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, m := range run.ManagedFields {
		if m.Subresource != "status" || m.FieldsV1 == nil {
			continue
		}
		for _, f := range fields {
			if strings.Contains(m.FieldsV1.GetRawString(), `"f:`+f+`"`) {
				out[f] = append(out[f], m.Manager)
			}
		}
	}
	return out
}

// startAsRunPod writes what pod writes when it starts run: Running, as
// itself (status.agentID).
func startAsRunPod(t *testing.T, run *kquantv1alpha1.QuantRun, pod *corev1.Pod) {
	t.Helper()
	fresh := &kquantv1alpha1.QuantRun{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(run), fresh); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	fresh.Status.Phase, fresh.Status.StartTime = kquantv1alpha1.RunPhaseRunning, &now
	fresh.Status.AgentID = kquantv1alpha1.RunPodAgentID(pod.Name, pod.UID)
	if err := env.Client.Status().Update(t.Context(), fresh, client.FieldOwner(apply.ManagerRunPod)); err != nil {
		t.Fatalf("starting the run as its run pod: %v", err)
	}
}

// TestEndLeftInTheTerminationMessageIsRecorded: a run pod ended its run
// but its status write never landed (the API server was away for as long
// as it retried). The pod's termination message carries the outcome, and
// the manager records it, results included, under its own field manager.
func TestEndLeftInTheTerminationMessageIsRecorded(t *testing.T) {
	ns := namespace(t)
	start(t, ns, runpod.AllocationDevicePlugin)
	run := boundRun(t, ns, "unrecorded-0-0", 0)
	pod := runPod(t, run)
	runStatus(t, run, "recording its run pod", func(s *kquantv1alpha1.QuantRunStatus) bool { return s.RunPod != nil })
	startAsRunPod(t, run, pod)

	ended := metav1.NewTime(time.Date(2026, 12, 7, 16, 0, 0, 0, time.UTC))
	setPodStatus(t, pod, exitedWith(t, runoutcome.Document{Phase: kquantv1alpha1.RunPhaseSucceeded,
		Message: "finished on GPU GPU-gpu-node-1-0", CompletionTime: &ended, Results: passing()}))
	got := runStatus(t, run, "Succeeded from its pod's termination message", func(s *kquantv1alpha1.QuantRunStatus) bool {
		return s.Phase == kquantv1alpha1.RunPhaseSucceeded
	})
	want := passing()
	want.Numbers = kquantv1alpha1.NumbersOf(want)
	if diff := cmp.Diff(want, got.Status.Results); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if got.Status.CompletionTime == nil || !got.Status.CompletionTime.Equal(&ended) || got.Status.Reason != "" ||
		!strings.HasPrefix(got.Status.Message, "finished on GPU GPU-gpu-node-1-0 (run pod "+pod.Name) {
		t.Errorf("completionTime %v reason %q message %q", got.Status.CompletionTime, got.Status.Reason, got.Status.Message)
	}
	owners := statusOwners(t, got, "results", "phase")
	if diff := cmp.Diff(map[string][]string{"results": {apply.ManagerController}, "phase": {apply.ManagerController}}, owners); diff != "" {
		t.Errorf("status field managers (-want +got):\n%s", diff)
	}
	for f, ms := range owners {
		for _, m := range ms {
			if !apply.Owns(m, f) {
				t.Errorf("%s writes %s, which apply.QuantRunStatusOwners does not give it", m, f)
			}
		}
	}
}

// TestRunPodsOwnEndIsNotWrittenTwice: when the run pod's own write landed,
// the manager writes nothing, whatever the pod's termination message says.
// The reconciler reads the API server itself here (no cache), so that each
// step is decided on what the step before wrote.
func TestRunPodsOwnEndIsNotWrittenTwice(t *testing.T) {
	ns := namespace(t)
	r := execution.New(env.Client, events.NewFakeRecorder(100), clock.RealClock{}, execution.Options{
		RunPod: runpod.Config{Allocation: runpod.AllocationDevicePlugin, Image: image},
	})
	run := boundRun(t, ns, "recorded-0-0", 0)
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(run)}
	if _, err := r.Reconcile(t.Context(), req); err != nil {
		t.Fatalf("creating the run pod: %v", err)
	}
	pod := runPod(t, run)
	// The run pod's own write: Succeeded with its results.
	fresh := &kquantv1alpha1.QuantRun{}
	if err := env.Client.Get(t.Context(), req.NamespacedName, fresh); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	fresh.Status.Phase, fresh.Status.Results, fresh.Status.CompletionTime = kquantv1alpha1.RunPhaseSucceeded, passing(), &now
	fresh.Status.Message = "finished by the pod"
	if err := env.Client.Status().Update(t.Context(), fresh, client.FieldOwner(apply.ManagerRunPod)); err != nil {
		t.Fatal(err)
	}
	// Its termination message says otherwise (it never would; the manager
	// must not look).
	failing := passing()
	failing.Verdict = kquantv1alpha1.VerdictFail
	setPodStatus(t, pod, exitedWith(t, runoutcome.Document{Phase: kquantv1alpha1.RunPhaseSucceeded, Message: "from the message", Results: failing}))
	if _, err := r.Reconcile(t.Context(), req); err != nil {
		t.Fatalf("reconciling the finished run: %v", err)
	}
	got := &kquantv1alpha1.QuantRun{}
	if err := env.Client.Get(t.Context(), req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Message != "finished by the pod" || got.Status.Results == nil || got.Status.Results.Verdict != kquantv1alpha1.VerdictPass ||
		got.ResourceVersion != fresh.ResourceVersion {
		t.Errorf("run rewritten after its pod's own write: resourceVersion %s (pod's %s), message %q, results %+v",
			got.ResourceVersion, fresh.ResourceVersion, got.Status.Message, got.Status.Results)
	}
}
