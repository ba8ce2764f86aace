package runpod

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

func podIn(phase corev1.PodPhase, edit ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
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

func TestPodOutcome(t *testing.T) {
	const gpuBusy = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
	tests := []struct {
		name     string
		runPhase kquantv1alpha1.RunPhase
		pod      *corev1.Pod
		want     Outcome
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
				Message: "GPU GPU-1111 runs processes 4242, 4343 besides this run", Retryable: true},
		},
		{
			name: "evicted: lost, retried",
			pod: podIn(corev1.PodFailed, func(p *corev1.Pod) {
				p.Status.Reason, p.Status.Message = "Evicted", "The node was low on resource: memory."
			}),
			want: Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonRunPodLost,
				Message: "Evicted: The node was low on resource: memory.", Retryable: true},
		},
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
				Message: "run pod was deleted before the run finished", Retryable: true},
		},
		{name: "deleted after a terminal run", runPhase: kquantv1alpha1.RunPhaseFailed},
		{
			name:     "killed by its deletion, seen before it is gone: lost, retried",
			runPhase: kquantv1alpha1.RunPhaseRunning,
			pod: podIn(corev1.PodFailed, terminated(137, "Error", "Signal received, stopping the run"), func(p *corev1.Pod) {
				p.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 11, 27, 10, 32, 54, 0, time.UTC)}
			}),
			want: Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonRunPodLost,
				Message: "run pod was deleted before the run finished", Retryable: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := boundRun()
			if tt.runPhase != "" {
				run.Status.Phase = tt.runPhase
			}
			got := PodOutcome(run, tt.pod)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("PodOutcome (-want +got):\n%s", diff)
			}
			if got.IsZero() != (tt.want == Outcome{}) {
				t.Errorf("IsZero = %v", got.IsZero())
			}
		})
	}
}
