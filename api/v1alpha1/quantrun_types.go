// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Labels that tie runs to their job and node. The agent watches runs by the node
// label, so it never scans the cluster.
const (
	// LabelJob carries the owning QuantJob's name on each QuantRun.
	LabelJob = "kquant.dev/job"
	// LabelNode carries the bound node's name on each bound QuantRun.
	LabelNode = "kquant.dev/node"
	// LabelPreflight marks a QuantRun that a workload's preflight init
	// container recorded (value "true"), not one a QuantJob expanded: the
	// manager never caches, binds or counts it, and the
	// kquant-preflight-run-restriction admission policy confines whoever is
	// not kquant to runs with this label (docs/security.md).
	LabelPreflight = "kquant.dev/preflight"
)

// AnnotationBindTime is when the controller bound the run to its GPU (RFC 3339),
// written in the same request as the binding itself; the node's agent copies
// it into status.bindTime when it starts the run.
const AnnotationBindTime = "kquant.dev/bind-time"

// BindTime is when the run was bound: status.bindTime once the agent (or an
// earlier manager) wrote it, else the AnnotationBindTime written with the
// binding; nil for an unbound run or a malformed annotation.
func (r *QuantRun) BindTime() *metav1.Time {
	if r.Status.BindTime != nil {
		return r.Status.BindTime
	}
	t, err := time.Parse(time.RFC3339, r.Annotations[AnnotationBindTime])
	if err != nil {
		return nil
	}
	return &metav1.Time{Time: t}
}

// JobReference names the QuantJob a run belongs to.
type JobReference struct {
	// name is the QuantJob's name.
	// +required
	Name string `json:"name"`
	// uid is the QuantJob's UID, so a run of a deleted and re-created job is never
	// mistaken for the new job's.
	// +optional
	UID types.UID `json:"uid,omitempty"`
}

// RecipeSnapshot is a copy of a QuantRecipe taken when the run was created.
type RecipeSnapshot struct {
	// kind is QuantRecipe or ClusterQuantRecipe; empty means QuantRecipe.
	// +optional
	Kind RecipeKind `json:"kind,omitempty"`
	// name is the recipe's name.
	// +required
	Name string `json:"name"`
	// generation is the recipe's metadata.generation at the time of the copy.
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// key is the recipe's canonical key at the time of the copy.
	// +optional
	Key string `json:"key,omitempty"`
	// spec is the recipe's spec at the time of the copy.
	// +required
	Spec QuantRecipeSpec `json:"spec"`
}

// QuantRunSpec is one unit of work bound to one GPU. It cannot change once
// nodeName is set.
//
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.nodeName) || size(oldSelf.nodeName) == 0 || self == oldSelf",message="spec is immutable once spec.nodeName is set"
// +kubebuilder:validation:XValidation:rule="!has(self.workload.groups) || !has(self.workload.groups.sizes) || self.workload.groups.sizes.all(n, n % (self.recipe.spec.scheme == 'MXFP8BlockScaling' ? 32 : self.recipe.spec.scheme in ['NVFP4BlockScaling', 'Float8BlockScaling'] ? 128 : 16) == 0)",message="spec.workload.groups.sizes must each be a multiple of the recipe's group alignment: 32 rows for MXFP8BlockScaling, 128 for NVFP4BlockScaling and Float8BlockScaling, 16 for DelayedScaling and Float8CurrentScaling",fieldPath=".workload.groups.sizes"
type QuantRunSpec struct {
	// jobRef names the QuantJob this run belongs to.
	// +required
	JobRef JobReference `json:"jobRef"`

	// recipe is a snapshot of the resolved recipe.
	// +required
	Recipe RecipeSnapshot `json:"recipe"`

	// mode is Benchmark or Validation, copied from the job.
	// +required
	Mode JobMode `json:"mode"`

	// workload is the job's workload.
	// +required
	Workload Workload `json:"workload"`

	// execution is the job's execution with the level's presets filled in.
	// +required
	Execution Execution `json:"execution"`

	// tolerances are the job's tolerances.
	// +optional
	Tolerances Tolerances `json:"tolerances,omitempty"`

	// nodeName is the node this run is bound to; empty until bound.
	// +optional
	NodeName string `json:"nodeName,omitempty"`

	// gpuUUID is the GPU this run is bound to, or the MIG device (MIG-...)
	// when migProfile is set; empty until bound.
	// +optional
	GPUUUID string `json:"gpuUUID,omitempty"`

	// gpuIndex is that GPU's index on its node (the parent GPU's for a MIG
	// device).
	// +optional
	GPUIndex *int32 `json:"gpuIndex,omitempty"`

	// migProfile is the MIG profile ("1g.10gb") of the MIG device the run is
	// bound to; empty for a whole GPU. The run pod asks for
	// nvidia.com/mig-<migProfile> (or, with DRA, pins the MIG device), so the
	// kubelet gives it a slice of that profile.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[0-9a-z][0-9a-z.]*$`
	MIGProfile string `json:"migProfile,omitempty"`

	// attempt counts the runs of the same slot of the job: 0 for the first, one
	// more for each retry.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Attempt int32 `json:"attempt,omitempty"`
}

// RunPhase is where a QuantRun is in its life. Like a Pod's, the stored phase
// stays Pending until the run actually runs, also once it is bound: binding
// writes only the spec (nodeName, gpuUUID) and the kquant.dev/node label, so
// a bound run waiting for its agent shows a node and phase Pending.
// +kubebuilder:validation:Enum=Pending;Bound;Running;Succeeded;Failed
type RunPhase string

const (
	// RunPhasePending: not running yet; waiting for a GPU when spec.gpuUUID is
	// empty, waiting for the node's agent to start it when bound.
	RunPhasePending RunPhase = "Pending"
	// RunPhaseBound: bound to a GPU, not yet started by the node's agent. The
	// controllers derive it from a bound spec whose stored phase is Pending
	// (and count it in metrics); it is stored only on runs bound by earlier
	// kquant managers, which wrote it with a second request after binding.
	RunPhaseBound RunPhase = "Bound"
	// RunPhaseRunning: the agent is running it.
	RunPhaseRunning RunPhase = "Running"
	// RunPhaseSucceeded: finished with results (the verdict may still be Fail).
	RunPhaseSucceeded RunPhase = "Succeeded"
	// RunPhaseFailed: could not finish (node lost, deadline, error); see message.
	RunPhaseFailed RunPhase = "Failed"
)

// IsTerminal reports whether a run in this phase will never change again.
func (p RunPhase) IsTerminal() bool { return p == RunPhaseSucceeded || p == RunPhaseFailed }

// RunPodAgentID is the status.agentID a run pod writes when it starts its
// run: the pod and its UID, so that a retried run's new pod is told from the
// old one.
func RunPodAgentID(podName string, podUID types.UID) string { return podName + "/" + string(podUID) }

// Run condition types.
const (
	// RunConditionRestarted is True when the agent found the run Running after a
	// restart of its own and ran it again from the start.
	RunConditionRestarted = "Restarted"
	// RunConditionAbandoned is True when the agent stopped the run on shutdown.
	RunConditionAbandoned = "Abandoned"
)

// Verdict is a run's judgement against its job's tolerances.
// +kubebuilder:validation:Enum=Pass;Fail;Warn;Skip
type Verdict string

const (
	// VerdictPass: every check passed.
	VerdictPass Verdict = "Pass"
	// VerdictFail: a tolerance was violated; reason says which.
	VerdictFail Verdict = "Fail"
	// VerdictWarn: passed, with something worth a look (for example saturation).
	VerdictWarn Verdict = "Warn"
	// VerdictSkip: the GPU cannot run the recipe at all.
	VerdictSkip Verdict = "Skip"
)

// Verdict reasons: the stable CamelCase codes of results.reason, written by
// the measurement engine and the simulated runner alike. Users and the job
// controller match on them; never rename one.
const (
	// VerdictReasonPass (Pass): every check passed.
	VerdictReasonPass = "Pass"
	// VerdictReasonRecipeUnsupported (Skip): the GPU can neither run nor
	// emulate the recipe.
	VerdictReasonRecipeUnsupported = "RecipeUnsupported"
	// VerdictReasonAlignmentViolation (Fail): a group of a grouped quantize
	// has a row count that is not a multiple of the recipe's alignment.
	VerdictReasonAlignmentViolation = "AlignmentViolation"
	// VerdictReasonNotBitExact (Fail with requireBitExact, else Warn): the
	// backend's bytes differ from the reference backend's.
	VerdictReasonNotBitExact = "NotBitExact"
	// VerdictReasonBitExactNotCompared (Warn): the job asks for bit-exactness
	// against the reference, which a simulated run cannot be compared with.
	VerdictReasonBitExactNotCompared = "BitExactNotCompared"
	// VerdictReasonReplayMismatch (Fail): a CUDA-graph replay gave other
	// bytes than the eager step.
	VerdictReasonReplayMismatch = "ReplayMismatch"
	// VerdictReasonNotCapturable (Warn): the step could not be captured into
	// a CUDA graph.
	VerdictReasonNotCapturable = "NotCapturable"
	// VerdictReasonSNRBelowTolerance (Fail): the worst SNR is below minSNRdB.
	VerdictReasonSNRBelowTolerance = "SNRBelowTolerance"
	// VerdictReasonSaturated (Warn): elements were clamped to the format's
	// largest value.
	VerdictReasonSaturated = "Saturated"
)

// Capability is how the run's GPU supports the recipe.
type Capability struct {
	// native is true when the GPU runs the recipe's GEMM natively.
	// +optional
	Native bool `json:"native"`
	// emulated is true when the GPU can quantize the recipe but not run its GEMM natively.
	// +optional
	Emulated bool `json:"emulated"`
	// reason is TransformerEngine's wording of why the recipe is not native.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// GraphResult says whether a step survives CUDA-graph capture.
type GraphResult struct {
	// capturable is true when the step was captured into a CUDA graph.
	// +optional
	Capturable bool `json:"capturable"`
	// replayMatchesEager is true when every replay produced the eager run's bytes.
	// +optional
	ReplayMatchesEager bool `json:"replayMatchesEager"`
}

// Overhead is the host (CPU) cost of launching a step.
type Overhead struct {
	// hostEagerMicros is the host time of one eager step, in microseconds.
	// +optional
	HostEagerMicros string `json:"hostEagerMicros,omitempty"`
	// hostGraphMicros is the host time of one graph replay of a step, in microseconds.
	// +optional
	HostGraphMicros string `json:"hostGraphMicros,omitempty"`
	// kernelsPerStep is the number of kernel launches in one step.
	// +optional
	KernelsPerStep int32 `json:"kernelsPerStep,omitempty"`
	// pointerLoadMicros is the host time to load the step's pointer payload
	// through kernel parameters, in microseconds (grouped steps).
	// +optional
	PointerLoadMicros string `json:"pointerLoadMicros,omitempty"`
}

// Performance is the GPU cost of a step.
type Performance struct {
	// gpuMicros is the GPU time of one step, in microseconds (CUDA events).
	// +optional
	GPUMicros string `json:"gpuMicros,omitempty"`
	// bandwidthGBps is the bytes a step moves divided by gpuMicros, in GB/s.
	// +optional
	BandwidthGBps string `json:"bandwidthGBps,omitempty"`
	// fractionOfCopyBandwidth is bandwidthGBps over the device-to-device copy
	// bandwidth measured in the same run (0 to 1).
	// +optional
	FractionOfCopyBandwidth string `json:"fractionOfCopyBandwidth,omitempty"`
	// fractionOfPeakBandwidth is bandwidthGBps over the device memory's
	// theoretical bandwidth (memory clock and bus width, as datasheets and
	// published kernel results quote it; 0 to 1).
	// +optional
	FractionOfPeakBandwidth string `json:"fractionOfPeakBandwidth,omitempty"`
}

// Accuracy compares the quantized tensor with its input.
type Accuracy struct {
	// bitExactVsReference is true when the backend's bytes equal the reference
	// backend's; unset when not compared (reference backend).
	// +optional
	BitExactVsReference *bool `json:"bitExactVsReference,omitempty"`
	// snrDB is the signal-to-noise ratio of the dequantized tensor (or, for
	// QuantizedLinear, of the layer output) against the unquantized one, in dB.
	// +optional
	SNRdB string `json:"snrDB,omitempty"`
	// maxAbsError is the largest absolute error after dequantization.
	// +optional
	MaxAbsError string `json:"maxAbsError,omitempty"`
	// saturated counts elements clamped to the format's largest value.
	// +optional
	Saturated int64 `json:"saturated,omitempty"`
	// flushedToZero counts nonzero elements that quantized to zero.
	// +optional
	FlushedToZero int64 `json:"flushedToZero,omitempty"`
}

// ShapeResult is the result of one shape of the workload.
type ShapeResult struct {
	// rows of the shape.
	// +required
	Rows int64 `json:"rows"`
	// cols of the shape.
	// +required
	Cols int64 `json:"cols"`
	// overhead of a step at this shape.
	// +optional
	Overhead *Overhead `json:"overhead,omitempty"`
	// performance of a step at this shape.
	// +optional
	Performance *Performance `json:"performance,omitempty"`
	// accuracy at this shape.
	// +optional
	Accuracy *Accuracy `json:"accuracy,omitempty"`
}

// RunResults are what a run measured. The top-level overhead, performance and
// accuracy are those of the largest shape (worst accuracy over all shapes).
type RunResults struct {
	// backend is the backend that ran the step: cuda or reference.
	// +optional
	Backend string `json:"backend,omitempty"`
	// usage is the operands each step produced (the workload's usage): the
	// bandwidth counts only their bytes, and the accuracy figures describe the
	// rowwise operand when it was produced, else the columnwise one.
	// +optional
	Usage Usage `json:"usage,omitempty"`
	// capability of the GPU for the recipe.
	// +optional
	Capability *Capability `json:"capability,omitempty"`
	// graph capture and replay results.
	// +optional
	Graph *GraphResult `json:"graph,omitempty"`
	// overhead is the host cost at the largest shape.
	// +optional
	Overhead *Overhead `json:"overhead,omitempty"`
	// performance is the GPU cost at the largest shape.
	// +optional
	Performance *Performance `json:"performance,omitempty"`
	// accuracy is the worst accuracy over all shapes.
	// +optional
	Accuracy *Accuracy `json:"accuracy,omitempty"`
	// shapes holds one result per workload shape.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Shapes []ShapeResult `json:"shapes,omitempty"`
	// verdict is Pass, Fail, Warn or Skip.
	// +optional
	Verdict Verdict `json:"verdict,omitempty"`
	// reason is a stable CamelCase code for the verdict (for example SNRBelowTolerance).
	// +optional
	Reason string `json:"reason,omitempty"`
	// baselines are the reference costs of the GPU the run executed on,
	// measured by its run pod right after the run (CUDA backend only): the
	// node's agent holds no CUDA context, and its GPUNodeProfile publishes the
	// baselines of the node's latest run that has them.
	// +optional
	Baselines *Baselines `json:"baselines,omitempty"`
	// numbers mirrors the headline decimals above as JSON numbers, for the
	// printer columns and kubectl --sort-by; written with the results.
	// +optional
	Numbers *ResultNumbers `json:"numbers,omitempty"`
}

// QuantRunStatus is written by the controller (NodeLost, deadlines, failed jobs)
// and by the agent of the bound node (execution and results), with server-side
// apply under different field managers. Binding a run does not write status.
// A forged or stale writer cannot rewrite history: a finished run stays
// finished, results come only with the end, and the run pod, once recorded,
// is the run's for good.
//
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.phase) || !(oldSelf.phase in ['Succeeded', 'Failed']) || (has(self.phase) && self.phase == oldSelf.phase)",message="status.phase: a finished run (Succeeded or Failed) cannot change phase"
// +kubebuilder:validation:XValidation:rule="!has(self.results) || (has(self.phase) && self.phase in ['Succeeded', 'Failed'])",message="status.results may be set only with phase Succeeded or Failed"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.runPod) || (has(self.runPod) && self.runPod == oldSelf.runPod)",message="status.runPod cannot change once recorded"
type QuantRunStatus struct {
	// observedGeneration is the generation that this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// phase is Pending (also while bound and not yet started, as a Pod's),
	// Running, Succeeded or Failed; Bound only on runs bound by older releases.
	// The API server defaults it to Pending.
	// +optional
	// +kubebuilder:default=Pending
	Phase RunPhase `json:"phase,omitempty"`
	// agentID identifies the agent process that ran the run (node and start time).
	// +optional
	AgentID string `json:"agentID,omitempty"`
	// bindTime is when the run was bound to its GPU, copied from the
	// kquant.dev/bind-time annotation by the controller when it records the
	// run pod or fails a bound run, or by the agent when it starts the run.
	// +optional
	BindTime *metav1.Time `json:"bindTime,omitempty"`
	// startTime is when the agent started the run.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime is when the run reached Succeeded or Failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// allocatedGPU is the GPU the run executed on, as its run pod found it:
	// with the device plugin the kubelet picks the GPU, so it may differ from
	// spec.gpuUUID, which is the controller's intent.
	// +optional
	AllocatedGPU *AllocatedGPU `json:"allocatedGPU,omitempty"`
	// results are the measured results.
	// +optional
	Results *RunResults `json:"results,omitempty"`
	// reason is a CamelCase code for a Failed run (for example NodeLost).
	// +optional
	Reason string `json:"reason,omitempty"`
	// message explains the phase to a person.
	// +optional
	Message string `json:"message,omitempty"`
	// runPod is the run pod the manager created for this run, recorded right
	// after it created it; only a token bound to a pod of this UID may write
	// the run's status as its run pod (the kquant-run-pod-restriction
	// admission policy). Empty with gpuAllocation None, where the agent runs
	// the run itself.
	// +optional
	RunPod *RunPodReference `json:"runPod,omitempty"`
	// conditions: Restarted, Abandoned.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RunPodReference names the pod that executes a run.
type RunPodReference struct {
	// name is the pod's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// uid is the pod's UID, which the API server puts into the pod's bound
	// service-account tokens (authentication.kubernetes.io/pod-uid).
	// +required
	UID types.UID `json:"uid"`
}

// AllocatedGPU is the GPU a run pod got from the kubelet.
type AllocatedGPU struct {
	// uuid is the physical GPU's UUID (the parent's for a MIG slice).
	// +required
	UUID string `json:"uuid"`
	// index is the GPU's NVML index on the node, when known.
	// +optional
	Index *int32 `json:"index,omitempty"`
	// migDevice is the UUID (MIG-...) of the MIG device the run got, when it
	// got a MIG slice.
	// +optional
	MIGDevice string `json:"migDevice,omitempty"`
	// source is DevicePlugin or DRA; empty for in-agent execution
	// (gpuAllocation None).
	// +optional
	Source AllocationSource `json:"source,omitempty"`
}

// QuantRun is one unit of a QuantJob bound to one GPU: what a Pod is to a Job.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=qrun,categories=kquant
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeName`,description="The node the run is bound to."
// +kubebuilder:printcolumn:name="GPU",type=integer,JSONPath=`.spec.gpuIndex`,description="The bound GPU's index on its node."
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="Pending, Running, Succeeded or Failed."
// +kubebuilder:printcolumn:name="Verdict",type=string,JSONPath=`.status.results.verdict`,description="Pass, Fail, Warn or Skip against the job's tolerances."
// +kubebuilder:printcolumn:name="Eager-us",type=number,JSONPath=`.status.results.numbers.hostEagerMicros`,description="Host time of one eager step, microseconds."
// +kubebuilder:printcolumn:name="Graph-us",type=number,JSONPath=`.status.results.numbers.hostGraphMicros`,description="Host time of one CUDA-graph replay of a step, microseconds."
// +kubebuilder:printcolumn:name="GB/s",type=number,JSONPath=`.status.results.numbers.bandwidthGBps`,description="Bytes a step moves over its GPU time, GB/s."
// +kubebuilder:printcolumn:name="SNR-dB",type=number,JSONPath=`.status.results.numbers.snrDB`,description="Worst signal-to-noise ratio of the dequantized tensor, dB."
// +kubebuilder:printcolumn:name="Usage",type=string,JSONPath=`.spec.workload.usage`,priority=1,description="Which operands the step produces: Rowwise, Columnwise or Both."
// +kubebuilder:printcolumn:name="GPU-UUID",type=string,JSONPath=`.spec.gpuUUID`,priority=1,description="The bound GPU's UUID."
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.results.reason`,priority=1,description="The verdict's stable reason code."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type QuantRun struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the work and where it is bound.
	// +required
	Spec QuantRunSpec `json:"spec"`

	// status is written by the controller and the node's agent. The API server
	// defaults it to {phase: Pending}, so that a new run shows Pending without
	// a status write.
	// +optional
	// +kubebuilder:default={}
	Status QuantRunStatus `json:"status,omitempty"`
}
