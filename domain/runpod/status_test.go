// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runpod

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/runoutcome"
)

func podIn(phase corev1.PodPhase, edit ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "run-1", UID: "pod-uid"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: ContainerName,
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}},
		Status: corev1.PodStatus{Phase: phase},
	}
	for _, e := range edit {
		e(p)
	}
	return p
}

func unschedulable(message string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: message})
	}
}

func terminated(code int32, reason, message string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: message}}}}
	}
}

func waiting(reason, message string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}}
	}
}

func withClaim(p *corev1.Pod) {
	p.Spec.Containers[0].Resources.Limits = nil
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu"}}
}

// finished is when the test's run pods ended their runs.
var finished = metav1.Date(2026, 11, 27, 10, 32, 54, 0, time.UTC)

// passed are a passing run's results.
func passed() *kquantv1alpha1.RunResults {
	return &kquantv1alpha1.RunResults{Backend: "cuda", Verdict: kquantv1alpha1.VerdictPass, Reason: "WithinTolerance"}
}

// encode is d as a run pod's termination message.
func encode(t *testing.T, d runoutcome.Document) string {
	t.Helper()
	msg, err := runoutcome.Encode(d)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// cutShapes is a termination message whose results lost their shapes to
// fit: what runoutcome.Encode leaves of passed() with too many shapes.
func cutShapes(t *testing.T) string {
	r := passed()
	for range 16 {
		r.Shapes = append(r.Shapes, kquantv1alpha1.ShapeResult{Rows: 1, Cols: 1,
			Performance: &kquantv1alpha1.Performance{GPUMicros: strings.Repeat("9", 300)}})
	}
	return encode(t, runoutcome.Document{Phase: kquantv1alpha1.RunPhaseSucceeded, Message: "finished", CompletionTime: &finished, Results: r})
}

func TestPodOutcome(t *testing.T) {
	const gpuBusy = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
	tests := []struct {
		name     string
		runPhase kquantv1alpha1.RunPhase
		// started is set when the pod wrote its start on the run
		// (status.agentID).
		started bool
		pod     *corev1.Pod
		want    Outcome
	}{
		{
			name: "no free GPU: the run waits",
			pod:  podIn(corev1.PodPending, unschedulable(gpuBusy)),
			want: Outcome{Phase: kquantv1alpha1.RunPhasePending, Reason: kquantv1alpha1.RunReasonWaitingForGPU, Message: gpuBusy},
		},
		{
			name: "DRA claim on a busy GPU: the run waits",
			pod:  podIn(corev1.PodPending, withClaim, unschedulable("0/1 nodes are available: 1 cannot allocate all claims.")),
			want: Outcome{Phase: kquantv1alpha1.RunPhasePending, Reason: kquantv1alpha1.RunReasonWaitingForGPU,
				Message: "0/1 nodes are available: 1 cannot allocate all claims."},
		},
		{
			name: "unschedulable for another reason",
			pod:  podIn(corev1.PodPending, unschedulable("0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: training}.")),
			want: Outcome{Phase: kquantv1alpha1.RunPhasePending, Reason: kquantv1alpha1.RunReasonRunPodUnschedulable,
				Message: "0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: training}."},
		},
		{
			name: "an image that cannot be pulled is shown",
			pod:  podIn(corev1.PodPending, waiting("ImagePullBackOff", `Back-off pulling image "kquant-agent:typo"`)),
			want: Outcome{Phase: kquantv1alpha1.RunPhasePending, Reason: kquantv1alpha1.RunReasonRunPodWaiting,
				Message: `ImagePullBackOff: Back-off pulling image "kquant-agent:typo"`},
		},
		{
			name: "a renamed GPU resource is still the GPU",
			pod: podIn(corev1.PodPending, func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/mig-1g.10gb": resource.MustParse("1")}
			}, unschedulable("0/1 nodes are available: 1 Insufficient nvidia.com/mig-1g.10gb.")),
			want: Outcome{Phase: kquantv1alpha1.RunPhasePending, Reason: kquantv1alpha1.RunReasonWaitingForGPU,
				Message: "0/1 nodes are available: 1 Insufficient nvidia.com/mig-1g.10gb."},
		},
		{
			name: "short of CPU is not waiting for a GPU",
			pod:  podIn(corev1.PodPending, unschedulable("0/1 nodes are available: 1 Insufficient cpu.")),
			want: Outcome{Phase: kquantv1alpha1.RunPhasePending, Reason: kquantv1alpha1.RunReasonRunPodUnschedulable,
				Message: "0/1 nodes are available: 1 Insufficient cpu."},
		},
		{
			name: "held by Kueue's scheduling gate: Kueue reports it, no write",
			pod: podIn(corev1.PodPending, func(p *corev1.Pod) {
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
					Reason: corev1.PodReasonSchedulingGated, Message: "Scheduling is blocked due to non-empty scheduling gates"}}
			}),
		},
		{name: "being created is progress", pod: podIn(corev1.PodPending, waiting("ContainerCreating", ""))},
		{name: "not yet looked at by the scheduler", pod: podIn(corev1.PodPending)},
		{name: "running: the run pod reports itself", pod: podIn(corev1.PodRunning)},
		{name: "unknown: NodeLost covers it", pod: podIn(corev1.PodUnknown)},
		{
			name: "the container failed",
			pod:  podIn(corev1.PodFailed, terminated(1, "Error", "creating CUDA context: out of memory\n")),
			want: Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonRunPodFailed,
				Message: "container run exited with code 1 (Error): creating CUDA context: out of memory"},
		},
		{
			name: "OOMKilled is the run's own failure",
			pod:  podIn(corev1.PodFailed, terminated(137, "OOMKilled", "")),
			want: Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonRunPodFailed,
				Message: "container run exited with code 137 (OOMKilled)"},
		},
		{
			name: "the GPU guard's reason is carried and retried",
			pod:  podIn(corev1.PodFailed, terminated(3, "Error", "GPUInUse: GPU GPU-1111 runs processes 4242, 4343 besides this run")),
			want: Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonGPUInUse,
				Message: "GPU GPU-1111 runs processes 4242, 4343 besides this run"},
		},
		{
			name: "evicted: lost, retried",
			pod: podIn(corev1.PodFailed, func(p *corev1.Pod) {
				p.Status.Reason, p.Status.Message = "Evicted", "The node was low on resource: memory."
			}),
			want: Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonRunPodLost,
				Message: "Evicted: The node was low on resource: memory."},
		},
		{
			name: "ended by a disruption: DisruptionTarget makes a container's exit a loss",
			pod: podIn(corev1.PodFailed, terminated(143, "Error", ""), func(p *corev1.Pod) {
				p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget,
					Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler", Message: "preempted by a higher priority pod"})
			}),
			want: Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonRunPodLost,
				Message: "PreemptionByScheduler: preempted by a higher priority pod"},
		},
		{
			name:     "node lost past its toleration: the taint manager's deletion fails the run at once",
			runPhase: kquantv1alpha1.RunPhaseRunning,
			pod: podIn(corev1.PodRunning, func(p *corev1.Pod) {
				p.Spec.NodeName = "gpu-node-1"
				p.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 11, 27, 10, 32, 54, 0, time.UTC)}
				p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget,
					Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager", Message: "Taint manager: deleting due to NoExecute taint"})
			}),
			want: Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonNodeLost,
				Message: "node gpu-node-1 lost: DeletionByTaintManager: Taint manager: deleting due to NoExecute taint"},
		},
		{
			name:     "evicted through the Eviction API, still stopping: wait for its end",
			runPhase: kquantv1alpha1.RunPhaseRunning,
			pod: podIn(corev1.PodRunning, func(p *corev1.Pod) {
				p.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 11, 27, 10, 32, 54, 0, time.UTC)}
				p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget,
					Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting"})
			}),
		},
		{name: "running on an unreachable node, not yet evicted: wait", runPhase: kquantv1alpha1.RunPhaseRunning, pod: podIn(corev1.PodUnknown)},
		{
			name: "failed without a container status",
			pod:  podIn(corev1.PodFailed),
			want: Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonRunPodFailed, Message: "run pod failed"},
		},
		{
			name:     "succeeded before the run did",
			runPhase: kquantv1alpha1.RunPhaseRunning,
			pod:      podIn(corev1.PodSucceeded),
			want: Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonRunPodExitedWithoutResult,
				Message: "run pod exited without a result"},
		},
		{name: "succeeded after writing its result", runPhase: kquantv1alpha1.RunPhaseSucceeded, pod: podIn(corev1.PodSucceeded)},
		{
			name:     "deleted before the run finished",
			runPhase: kquantv1alpha1.RunPhaseRunning,
			want: Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonRunPodLost,
				Message: "run pod was deleted before the run finished"},
		},
		{name: "deleted after a terminal run", runPhase: kquantv1alpha1.RunPhaseFailed},
		{
			name:     "killed by its deletion, seen before it is gone: lost, retried",
			runPhase: kquantv1alpha1.RunPhaseRunning,
			pod: podIn(corev1.PodFailed, terminated(137, "Error", "Signal received, stopping the run"), func(p *corev1.Pod) {
				p.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 11, 27, 10, 32, 54, 0, time.UTC)}
			}),
			want: Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonRunPodLost,
				Message: "run pod was deleted before the run finished"},
		},
		{
			name:     "ended the run, its write never landed: recorded from its termination message",
			runPhase: kquantv1alpha1.RunPhaseRunning,
			started:  true,
			pod: podIn(corev1.PodFailed, terminated(1, "Error", encode(t, runoutcome.Document{Phase: kquantv1alpha1.RunPhaseSucceeded,
				Message: "finished on GPU GPU-1111", CompletionTime: &finished, Results: passed()}))),
			want: Outcome{Phase: kquantv1alpha1.RunPhaseSucceeded,
				Message: "finished on GPU GPU-1111 (run pod run-1 ended the run but could not record it; recorded from its termination message)",
				FromPod: true, Results: passed(), CompletionTime: &finished},
		},
		{
			name:     "results cut to fit: the message says what is missing",
			runPhase: kquantv1alpha1.RunPhaseRunning,
			started:  true,
			pod:      podIn(corev1.PodSucceeded, terminated(0, "Completed", cutShapes(t))),
			want: Outcome{Phase: kquantv1alpha1.RunPhaseSucceeded,
				Message: "finished (run pod run-1 ended the run but could not record it; recorded from its termination message without shapes (too long for it))",
				FromPod: true, Results: passed(), CompletionTime: &finished},
		},
		{
			name:     "its own retryable failure, deleted as it exited",
			runPhase: kquantv1alpha1.RunPhaseRunning,
			started:  true,
			pod: podIn(corev1.PodFailed, terminated(1, "Error", encode(t, runoutcome.Document{Phase: kquantv1alpha1.RunPhaseFailed,
				Reason: kquantv1alpha1.RunReasonRunPodLost, Message: "asked to stop"})), func(p *corev1.Pod) {
				p.DeletionTimestamp = &finished
				p.Status.ContainerStatuses[0].State.Terminated.FinishedAt = finished
			}),
			want: Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonRunPodLost,
				Message: "asked to stop (run pod run-1 ended the run but could not record it; recorded from its termination message)",
				FromPod: true, CompletionTime: &finished},
		},
		{
			name:     "a termination message of a pod that did not start the run is only its exit",
			runPhase: kquantv1alpha1.RunPhaseRunning,
			pod: podIn(corev1.PodFailed, terminated(1, "Error", encode(t, runoutcome.Document{Phase: kquantv1alpha1.RunPhaseSucceeded,
				Message: "forged", Results: passed()}))),
			want: Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonRunPodFailed,
				Message: "container run exited with code 1 (Error): " + encode(t, runoutcome.Document{Phase: kquantv1alpha1.RunPhaseSucceeded,
					Message: "forged", Results: passed()})},
		},
		{
			name:     "its write landed: nothing to do",
			runPhase: kquantv1alpha1.RunPhaseSucceeded,
			pod: podIn(corev1.PodSucceeded, terminated(0, "Completed", encode(t, runoutcome.Document{Phase: kquantv1alpha1.RunPhaseSucceeded,
				Message: "finished", Results: passed()}))),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := boundRun()
			if tt.runPhase != "" {
				run.Status.Phase = tt.runPhase
			}
			if tt.started {
				run.Status.AgentID = kquantv1alpha1.RunPodAgentID(tt.pod.Name, tt.pod.UID)
			}
			got := PodOutcome(run, tt.pod)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("PodOutcome (-want +got):\n%s", diff)
			}
			// The manager decides from its cache's copy of the pod.
			if tt.pod != nil {
				cached, err := CachedPod(tt.pod.DeepCopy())
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, PodOutcome(run, cached.(*corev1.Pod))); diff != "" {
					t.Errorf("PodOutcome of the cached pod (-want +got):\n%s", diff)
				}
			}
			if got.IsZero() != (tt.want == Outcome{}) {
				t.Errorf("IsZero = %v", got.IsZero())
			}
		})
	}
}
