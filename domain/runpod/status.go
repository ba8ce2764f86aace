// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runpod

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/runoutcome"
)

// Outcome is what a run pod's state means for its run. The zero Outcome
// means "nothing to write": the run pod itself writes Running and the
// results, the controller only the waiting and failure cases below, and a
// run's end that the pod left in its termination message but could not
// write (FromPod).
type Outcome struct {
	// Phase is the run's phase to write: Pending (with a waiting reason),
	// Failed, or Succeeded when FromPod; empty for no change.
	Phase kquantv1alpha1.RunPhase
	// Reason is one of the RunReason* constants.
	Reason string
	// Message explains it to a person.
	Message string
	// FromPod is set when the outcome is the run pod's own, read from its
	// termination message (internal/runoutcome): the pod ended the run but
	// its status write never landed. Results and CompletionTime are then
	// the pod's.
	FromPod        bool
	Results        *kquantv1alpha1.RunResults
	CompletionTime *metav1.Time
}

// IsZero reports whether o asks for no change.
func (o Outcome) IsZero() bool { return o == Outcome{} }

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
		Message: "run pod was deleted before the run finished"}
	if pod == nil {
		return deleted
	}
	if out, ok := recordedOutcome(run, pod); ok {
		return out
	}
	if out, ok := nodeLostOutcome(pod); ok {
		return out
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
		// is unreachable; the pod is given until the node's taints evict
		// it (nodeLostOutcome), as a partition may heal.
		return Outcome{}
	}
}

// recordedOutcome is the run's end as an exited run pod left it in its
// termination message, when it left one: the pod ran the run to its end and
// its own status write did not land (were it in, the run would be finished
// and PodOutcome would not look). It holds even for a pod deleted as it
// exited: the pod's account of the run beats a guess from outside. It is
// taken only from the pod that started the run (status.agentID, which only
// that pod's token may write): a pod's termination message is written by
// the kubelet, and by whoever else may update the pod's status, so the
// start the pod wrote as itself is what ties the message to the run.
func recordedOutcome(run *kquantv1alpha1.QuantRun, pod *corev1.Pod) (Outcome, bool) {
	if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed ||
		run.Status.AgentID != kquantv1alpha1.RunPodAgentID(pod.Name, pod.UID) {
		return Outcome{}, false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		t := cs.State.Terminated
		if cs.Name != ContainerName || t == nil {
			continue
		}
		doc, err := runoutcome.Decode(t.Message)
		if err != nil {
			return Outcome{}, false
		}
		message := "run pod " + pod.Name + " ended the run but could not record it; recorded from its termination message"
		if len(doc.Dropped) > 0 {
			message += " without " + strings.Join(doc.Dropped, ", ") + " (too long for it)"
		}
		if doc.Message != "" {
			message = doc.Message + " (" + message + ")"
		}
		completion := doc.CompletionTime
		if completion == nil {
			completion = &t.FinishedAt
		}
		reason := doc.Reason
		if doc.Phase == kquantv1alpha1.RunPhaseFailed && reason == "" {
			reason = kquantv1alpha1.RunReasonRunPodFailed
		}
		return Outcome{Phase: doc.Phase, Reason: reason, Message: message,
			FromPod: true, Results: doc.Results, CompletionTime: completion}, true
	}
	return Outcome{}, false
}

// nodeLostReasons are the reasons of the DisruptionTarget condition with
// which Kubernetes deletes a pod because its Node was lost: the taint
// manager's, once the Node stayed NotReady or Unreachable past the pod's
// toleration (node.kubernetes.io/not-ready and unreachable, 300 s by the
// DefaultTolerationSeconds admission plugin), and the pod garbage
// collector's, once the Node was deleted.
var nodeLostReasons = map[string]bool{
	"DeletionByTaintManager": true,
	"DeletionByPodGC":        true,
}

// nodeLostOutcome fails the run as NodeLost when Kubernetes deletes its pod
// because the Node was lost. This is how a run follows its Node's Ready
// condition without the manager reading Nodes (it caches them as metadata
// only, fleet.NodeMetadata, for a fleet's thousands of Nodes whose status
// changes every few seconds): the node lifecycle controller already watches
// Ready and turns a Node lost past the grace into this pod condition. The
// run fails at once, not when the pod is gone: a pod on an unreachable node
// stays Terminating until the node returns, and if it returns, its write
// on the finished run is refused (a terminal phase is final). Other
// DisruptionTarget reasons (EvictionByEvictionAPI, PreemptionByScheduler,
// TerminationByKubelet) end the pod as RunPodLost, the kubelet's kill making
// it Failed first.
func nodeLostOutcome(pod *corev1.Pod) (Outcome, bool) {
	if pod.DeletionTimestamp == nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return Outcome{}, false
	}
	c := disruptionTarget(pod)
	if c == nil || !nodeLostReasons[c.Reason] {
		return Outcome{}, false
	}
	return Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonNodeLost,
		Message: fmt.Sprintf("node %s lost: %s", pod.Spec.NodeName, joinReason(c.Reason, c.Message))}, true
}

// disruptionTarget is the pod's DisruptionTarget condition when it is True:
// Kubernetes' mark that the pod is being ended by a disruption, not by its
// own failure (the condition a Job's podFailurePolicy matches).
func disruptionTarget(pod *corev1.Pod) *corev1.PodCondition {
	for i, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
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
	// pressure), preemption, a deadline, the node shutting down; a
	// DisruptionTarget condition says so even when the container's exit is
	// all the status shows.
	if pod.Status.Reason != "" {
		return Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonRunPodLost,
			Message: joinReason(pod.Status.Reason, pod.Status.Message)}
	}
	if c := disruptionTarget(pod); c != nil {
		return Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonRunPodLost,
			Message: joinReason(c.Reason, c.Message)}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		t := cs.State.Terminated
		if cs.Name != ContainerName || t == nil {
			continue
		}
		// A bare "<Reason>: <message>" without the outcome document (a run
		// pod of an earlier release) is read for GPUInUse alone, the one
		// reason those pods left there.
		if reason, message, ok := strings.Cut(strings.TrimSpace(t.Message), ": "); ok && reason == kquantv1alpha1.RunReasonGPUInUse {
			return Outcome{Phase: kquantv1alpha1.RunPhaseFailed, Reason: reason, Message: message}
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
