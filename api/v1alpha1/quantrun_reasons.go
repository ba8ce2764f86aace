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
	// RunReasonGPUInUse (phase Failed, retried): NVML showed a process other
	// than the run's own on the run's GPU, before its first kernel or while it
	// ran.
	RunReasonGPUInUse = "GPUInUse"
	// RunReasonRunPodUnschedulable (phase Pending): the run pod cannot be
	// scheduled for a reason other than a busy GPU (taints, node gone).
	RunReasonRunPodUnschedulable = "RunPodUnschedulable"
	// RunReasonRunPodWaiting (phase Pending): the run pod is scheduled and its
	// container cannot start (an image that cannot be pulled, a bad config).
	RunReasonRunPodWaiting = "RunPodWaiting"
	// RunReasonRunPodFailed (phase Failed): the run pod failed; the message
	// carries the container's reason and message.
	RunReasonRunPodFailed = "RunPodFailed"
	// RunReasonRunPodLost (phase Failed, retried): the run pod was deleted,
	// evicted or preempted before the run finished.
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
