package runpod

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// Outcome is what a run pod's state means for its run. The zero Outcome
// means "nothing to write": the run pod itself writes Running and the
// results, the controller only the waiting and failure cases below.
type Outcome struct {
	// Phase is the run's phase to write: Pending (with a waiting reason) or
	// Failed; empty for no change.
	Phase kquantv1alpha1.RunPhase
	// Reason is one of the RunReason* constants.
	Reason string
	// Message explains it to a person.
	Message string
	// Retryable is true when the failure came from outside the run (the pod
	// was lost, evicted or preempted, or another process held the GPU): it
	// says nothing about the GPU or the recipe, and a new attempt may follow.
	Retryable bool
}

// IsZero reports whether o asks for no change.
func (o Outcome) IsZero() bool { return o == Outcome{} }

// gpuGuardReasons are the reasons a run pod may report as its own in its
// termination message ("<Reason>: <message>"), and whether they are
// retryable.
var gpuGuardReasons = map[string]bool{
	kquantv1alpha1.RunReasonGPUInUse: true,
}

// waitingReasonsThatBlock are container waiting reasons that will not clear
// on their own; others (ContainerCreating, PodInitializing) are progress.
var waitingReasonsThatBlock = map[string]bool{
	"ErrImagePull":               true,
	"ImagePullBackOff":           true,
	"InvalidImageName":           true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
}

// PodOutcome maps the run pod's state to its run. pod is nil when the run
// pod is known to be gone: the caller saw it before (the run is bound and was
// started, or a creation expectation was met) and now finds none; a pod that
// was never created is the caller's to create, not a loss.
func PodOutcome(run *kquantv1alpha1.QuantRun, pod *corev1.Pod) Outcome {
	if run.Status.Phase.IsTerminal() {
		return Outcome{}
	}
	deleted := Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonRunPodLost,
		Message: "run pod was deleted before the run finished", Retryable: true}
	if pod == nil {
		return deleted
	}
	switch pod.Status.Phase {
	case corev1.PodPending:
		return pendingOutcome(pod)
	case corev1.PodFailed:
		if pod.DeletionTimestamp != nil {
			// Deleted mid-run (kubectl delete, a drain): the kubelet's kill
			// on the way out makes the pod Failed, which is the deletion's
			// doing, not the run's; seen or not before the pod is gone, it
			// is the same loss.
			return deleted
		}
		return failedOutcome(pod)
	case corev1.PodSucceeded:
		return Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonRunPodExitedWithoutResult,
			Message: "run pod exited without a result"}
	default:
		// Running: the run pod writes its own progress. Unknown: the node
		// is unreachable, which the node's Lease expiry (NodeLost) covers.
		return Outcome{}
	}
}

// pendingOutcome explains why a pending run pod has not started, when it is
// something a user should see; plain progress (being scheduled, pulling,
// creating) needs no status write.
func pendingOutcome(pod *corev1.Pod) Outcome {
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.PodScheduled || c.Status != corev1.ConditionFalse || c.Reason != corev1.PodReasonUnschedulable {
			continue
		}
		reason := kquantv1alpha1.RunReasonRunPodUnschedulable
		if waitsForGPU(pod, c.Message) {
			reason = kquantv1alpha1.RunReasonWaitingForGPU
		}
		return Outcome{Phase: kquantv1alpha1.RunPhasePending, Reason: reason, Message: c.Message}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && waitingReasonsThatBlock[w.Reason] {
			return Outcome{Phase: kquantv1alpha1.RunPhasePending, Reason: kquantv1alpha1.RunReasonRunPodWaiting,
				Message: joinReason(w.Reason, w.Message)}
		}
	}
	return Outcome{}
}

// waitsForGPU reports whether the scheduler's message blames the GPU: the
// pod's extended resource is short ("Insufficient nvidia.com/gpu"; a run
// pod's only extended resource is its GPU, whatever the chart named it), or
// the pod's DRA claim cannot be allocated. The scheduler's messages are the
// only place this is said; they have been stable for years, and a miss only
// turns WaitingForGPU into RunPodUnschedulable with the same message.
func waitsForGPU(pod *corev1.Pod, message string) bool {
	for _, ctr := range pod.Spec.Containers {
		for name := range ctr.Resources.Limits {
			if strings.Contains(string(name), "/") && strings.Contains(message, "Insufficient "+string(name)) {
				return true
			}
		}
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		for _, s := range []string{"cannot allocate all claims", "resourceclaim not available", "ResourceClaim not available"} {
			if strings.Contains(message, s) {
				return true
			}
		}
	}
	return false
}

// failedOutcome carries the pod's or its container's reason and message. A
// run pod that found its GPU busy says so in its termination message.
func failedOutcome(pod *corev1.Pod) Outcome {
	// Pod-level failures come from outside the run: eviction (node
	// pressure), preemption, a deadline, the node shutting down.
	if pod.Status.Reason != "" {
		return Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonRunPodLost,
			Message: joinReason(pod.Status.Reason, pod.Status.Message), Retryable: true}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		t := cs.State.Terminated
		if cs.Name != ContainerName || t == nil {
			continue
		}
		if reason, message, ok := strings.Cut(strings.TrimSpace(t.Message), ": "); ok {
			if retryable, known := gpuGuardReasons[reason]; known {
				return Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: reason, Message: message, Retryable: retryable}
			}
		}
		msg := fmt.Sprintf("container %s exited with code %d", cs.Name, t.ExitCode)
		if t.Reason != "" {
			msg += " (" + t.Reason + ")"
		}
		if t.Message != "" {
			msg += ": " + strings.TrimSpace(t.Message)
		}
		// OOMKilled is the run's own doing (its sizes), not a lost pod.
		return Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonRunPodFailed, Message: msg}
	}
	return Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonRunPodFailed,
		Message: joinReason("run pod failed", pod.Status.Message)}
}

func joinReason(reason, message string) string {
	if message == "" {
		return reason
	}
	return reason + ": " + message
}
