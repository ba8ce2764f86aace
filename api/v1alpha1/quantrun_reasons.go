// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

// Run reasons of the run-pod model: the CamelCase codes of a QuantRun's
// status.reason while its run pod waits or after it failed. More than one
// component sets or matches them (the controller maps run-pod status to
// them, the run pod's GPU guard reports GPUInUse, the job controller decides
// retries on them), so they live beside the API. Never rename one.
const (
	// RunReasonWaitingForGPU (phase Pending): the run pod cannot be scheduled
	// because no GPU of the kind it asks for is free on its node; the message
	// is the scheduler's.
	RunReasonWaitingForGPU = "WaitingForGPU"
	// RunReasonGPUInUse (phase Failed, a disruption): NVML showed a process other
	// than the run's own on the run's GPU, before its first kernel or while it
	// ran.
	RunReasonGPUInUse = "GPUInUse"
	// RunReasonRunPodUnschedulable (phase Pending): the run pod cannot be
	// scheduled for a reason other than a busy GPU (taints, node gone).
	RunReasonRunPodUnschedulable = "RunPodUnschedulable"
	// RunReasonRunPodWaiting (phase Pending): the run pod is scheduled and its
	// container cannot start (an image that cannot be pulled, a bad config).
	RunReasonRunPodWaiting = "RunPodWaiting"
	// RunReasonRunPodFailed (phase Failed, the run's own failure): the run
	// pod failed (a crash, an OOM kill, a Fail verdict's error path); the
	// message carries the container's reason and message.
	RunReasonRunPodFailed = "RunPodFailed"
	// RunReasonRunPodLost (phase Failed, a disruption): the run pod was
	// deleted, evicted or preempted before the run finished, including the
	// drain of a GPU Operator driver upgrade (an eviction).
	RunReasonRunPodLost = "RunPodLost"
	// RunReasonRunPodExitedWithoutResult (phase Failed): the run pod exited
	// successfully without writing a terminal status.
	RunReasonRunPodExitedWithoutResult = "RunPodExitedWithoutResult"
	// RunReasonRunTimedOut (phase Failed, counted against backoffLimit): the
	// run pod ran longer than the run's time limit
	// (spec.execution.runTimeoutSeconds, by default its level's), counted
	// from when its node's kubelet accepted it; the execution controller
	// deleted the pod, which freed its GPU.
	RunReasonRunTimedOut = "RunTimedOut"
	// RunReasonRunPodRestarted (phase unchanged): the run was bound and had
	// started without a run pod (the in-agent execution of an earlier release,
	// or a run pod lost while no manager watched), and the controller gave it
	// a new run pod, which starts it over.
	RunReasonRunPodRestarted = "RunPodRestarted"
)

// RunReasonNodeLost (phase Failed, a disruption): the run's node was lost.
// In run-pod mode that is the Node itself: its Ready condition stayed
// NotReady or Unknown past the run pod's toleration, so the taint manager
// deleted the pod, or the Node was deleted. In in-agent mode
// (gpuAllocation None) it is the agent's Lease expiring. The same code as
// the job condition reason ReasonNodeLost.
const RunReasonNodeLost = ReasonNodeLost

// disruptionReasons are the run reasons of failures that came from outside
// the run: the node, the scheduler, an eviction or another process took the
// run's pod or GPU away. Like a Job's podFailurePolicy rule on the pod
// condition DisruptionTarget, they say nothing about the GPU or the recipe:
// the job retries them without using spec.backoffLimit, up to
// spec.disruptionLimit. Every other failure reason is the run's own.
var disruptionReasons = map[string]bool{
	RunReasonNodeLost:   true,
	RunReasonRunPodLost: true,
	RunReasonGPUInUse:   true,
}

// IsRunDisruption reports whether a failed run's status.reason is a
// disruption (counted in a job's status.disruptions, bounded by
// spec.disruptionLimit) rather than the run's own failure (counted in
// status.failed, bounded by spec.backoffLimit). It is the one place that
// classifies run failures.
func IsRunDisruption(reason string) bool { return disruptionReasons[reason] }
