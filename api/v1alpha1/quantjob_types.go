// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// JobMode is what a QuantJob measures.
// +kubebuilder:validation:Enum=Benchmark;Validation
type JobMode string

const (
	// JobModeBenchmark measures overhead, GPU time and bandwidth (accuracy too).
	JobModeBenchmark JobMode = "Benchmark"
	// JobModeValidation checks correctness against the reference and the tolerances.
	JobModeValidation JobMode = "Validation"
)

// Level is a preset of sizes and iterations, like DCGM's diagnostic levels.
// +kubebuilder:validation:Enum=Quick;Standard;Extended
type Level string

const (
	// LevelQuick runs few iterations: seconds per run.
	LevelQuick Level = "Quick"
	// LevelStandard is the default.
	LevelStandard Level = "Standard"
	// LevelExtended runs many iterations for stable numbers.
	LevelExtended Level = "Extended"
)

// PlacementPolicy decides how many runs a job expands into.
// +kubebuilder:validation:Enum=AnyGPU;EachNode;EachGPU
type PlacementPolicy string

const (
	// PlacementAnyGPU runs once on any eligible GPU.
	PlacementAnyGPU PlacementPolicy = "AnyGPU"
	// PlacementEachNode runs once on every eligible node.
	PlacementEachNode PlacementPolicy = "EachNode"
	// PlacementEachGPU runs once on every eligible GPU.
	PlacementEachGPU PlacementPolicy = "EachGPU"
)

// Architecture is an NVIDIA GPU architecture family, derived from the compute
// capability. Capability rules key on the numbers, never on this name.
// +kubebuilder:validation:Enum=Ampere;Ada;Hopper;Blackwell;Unknown
type Architecture string

const (
	// ArchitectureAmpere is compute capability 8.0 and 8.6/8.7.
	ArchitectureAmpere Architecture = "Ampere"
	// ArchitectureAda is compute capability 8.9.
	ArchitectureAda Architecture = "Ada"
	// ArchitectureHopper is compute capability 9.x.
	ArchitectureHopper Architecture = "Hopper"
	// ArchitectureBlackwell is compute capability 10.x, 11.x and 12.x.
	ArchitectureBlackwell Architecture = "Blackwell"
	// ArchitectureUnknown is anything else.
	ArchitectureUnknown Architecture = "Unknown"
)

// RecipeKind is the kind of recipe a job references.
// +kubebuilder:validation:Enum=QuantRecipe;ClusterQuantRecipe
type RecipeKind string

const (
	// RecipeKindNamespaced is a QuantRecipe in the job's namespace.
	RecipeKindNamespaced RecipeKind = "QuantRecipe"
	// RecipeKindCluster is a ClusterQuantRecipe of the cluster's catalog.
	RecipeKindCluster RecipeKind = "ClusterQuantRecipe"
)

// RecipeReference names a QuantRecipe in the job's namespace, or a
// ClusterQuantRecipe.
type RecipeReference struct {
	// kind is QuantRecipe (default: in the job's namespace) or
	// ClusterQuantRecipe (the cluster's catalog).
	// +optional
	// +kubebuilder:default=QuantRecipe
	Kind RecipeKind `json:"kind,omitempty"`

	// name is the recipe's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// MIGSlices says whether a job runs on the MIG devices of MIG-enabled GPUs.
// +kubebuilder:validation:Enum=Skip;Include
type MIGSlices string

const (
	// MIGSlicesSkip (the default): MIG-enabled GPUs are not used. A job that
	// has no other eligible GPU is Unschedulable and says so.
	MIGSlicesSkip MIGSlices = "Skip"
	// MIGSlicesInclude: every MIG device (slice) of a MIG-enabled GPU is a
	// unit of work, as a whole GPU is: EachGPU runs once on each slice. A run
	// pod asks for its slice's profile (nvidia.com/mig-<profile>, the device
	// plugin's mixed strategy) or, with DRA, pins the MIG device.
	MIGSlicesInclude MIGSlices = "Include"
)

// Placement chooses the nodes and GPUs a job runs on.
type Placement struct {
	// policy is AnyGPU (default: one run), EachNode (one run per eligible node) or
	// EachGPU (one run per eligible GPU).
	// +optional
	// +kubebuilder:default=AnyGPU
	Policy PlacementPolicy `json:"policy,omitempty"`

	// architectures, when set, admits only GPUs of these families.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=5
	Architectures []Architecture `json:"architectures,omitempty"`

	// minComputeCapability, when set, admits only GPUs with at least this compute
	// capability, written "major.minor" (for example "9.0").
	// +optional
	// +kubebuilder:validation:MaxLength=8
	// +kubebuilder:validation:Pattern=`^[0-9]{1,2}\.[0-9]{1,2}$`
	MinComputeCapability string `json:"minComputeCapability,omitempty"`

	// requireNative admits only GPUs that run the recipe's GEMM natively; without
	// it, GPUs that can only emulate the recipe are eligible too.
	// +optional
	RequireNative bool `json:"requireNative,omitempty"`

	// migSlices is Skip (default: MIG-enabled GPUs are not used) or Include
	// (each MIG device of a MIG-enabled GPU is a unit of work, like a whole
	// GPU: EachGPU runs once on every slice). A MIG slice is shared hardware
	// (its GPU's other slices run other pods), so using it is an explicit
	// choice.
	// +optional
	MIGSlices MIGSlices `json:"migSlices,omitempty"`

	// nodeSelector admits only nodes whose labels match.
	// +optional
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`

	// maxParallel is the most runs of this job active at once. Default 8.
	// +optional
	// +kubebuilder:default=8
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	MaxParallel *int32 `json:"maxParallel,omitempty"`

	// maxRuns is the most runs the job's policy may expand into (one per
	// eligible node for EachNode, per eligible GPU for EachGPU). A job whose
	// policy needs more fails with reason TooManyRuns before it creates any,
	// rather than fill the namespace with runs. Default 10000.
	// +optional
	// +kubebuilder:default=10000
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	MaxRuns *int32 `json:"maxRuns,omitempty"`
}

// QuantJobSpec asks for a benchmark or validation of a recipe on a workload.
// +kubebuilder:validation:XValidation:rule="!has(self.gate)",message="spec.gate is not allowed: a namespaced job cannot change Nodes; a platform admin gates nodes with a cluster-scoped QuantGatePolicy (see docs/gates-and-schedules.md and docs/security.md)",fieldPath=".gate"
type QuantJobSpec struct {
	// recipeRef names the recipe to run: a QuantRecipe in the job's namespace
	// or a ClusterQuantRecipe. The recipe is copied into each run when the run
	// is created, so later edits to the recipe never change work in flight.
	// +required
	RecipeRef RecipeReference `json:"recipeRef"`

	// mode is Validation (default: correctness against the reference) or Benchmark
	// (overhead, GPU time and bandwidth as well).
	// +optional
	// +kubebuilder:default=Validation
	Mode JobMode `json:"mode,omitempty"`

	// level is Quick, Standard (default) or Extended: presets of iterations.
	// +optional
	// +kubebuilder:default=Standard
	Level Level `json:"level,omitempty"`

	// workload is what to quantize.
	// +required
	Workload Workload `json:"workload"`

	// execution is how each step runs: eager, CUDA graph or both, and how often.
	// +optional
	// +kubebuilder:default={}
	Execution Execution `json:"execution,omitempty"`

	// placement chooses nodes and GPUs.
	// +optional
	// +kubebuilder:default={}
	Placement Placement `json:"placement,omitempty"`

	// tolerances decide each run's verdict.
	// +optional
	Tolerances Tolerances `json:"tolerances,omitempty"`

	// backoffLimit is how many runs that failed by their own doing (not by a
	// disruption, see disruptionLimit) are retried (on another GPU where one
	// is eligible) before the job fails. Default 3.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`

	// disruptionLimit is how many run attempts may fail by a disruption
	// (reasons NodeLost, RunPodLost, GPUInUse: a lost node, an eviction, a
	// preemption, a driver upgrade's drain, another process on the GPU)
	// before the job fails with DisruptionLimitExceeded. Disruptions are
	// retried without using backoffLimit, which counts only the runs' own
	// failures.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	DisruptionLimit *int32 `json:"disruptionLimit,omitempty"`

	// activeDeadlineSeconds fails the job and its active runs when it has been
	// running this long. At most 366 days.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=31622400
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// ttlSecondsAfterFinished deletes the job and its runs this long after it
	// finished. At most 366 days.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=31622400
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// gate is refused at admission: a namespaced job cannot change Nodes. A
	// cluster-scoped QuantGatePolicy gates nodes (docs/gates-and-schedules.md,
	// docs/security.md). The field stays in the schema only so that an old
	// manifest is refused with that message instead of silently losing it.
	// +optional
	Gate *Gate `json:"gate,omitempty"`
}

// Gate is the refused spec.gate of a QuantJob; QuantGatePolicy's actions
// replaced it.
type Gate struct {
	// label was the failing-node label; see QuantGatePolicy spec.actions.label.
	// +optional
	Label bool `json:"label,omitempty"`
	// taint was the failing-node taint's effect; see QuantGatePolicy
	// spec.actions.taint.
	// +optional
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
	Taint corev1.TaintEffect `json:"taint,omitempty"`
}

// GateLabelPrefix prefixes the gate labels and taints: gate.kquant.dev/<family>.
// It is a prefix of its own so that the gate never shares a key with the
// recipe-support labels (kquant.dev/<family>=native|emulated).
const GateLabelPrefix = "gate.kquant.dev/"

// GateValueFailed is the value of a gate label or taint.
const GateValueFailed = "failed"

// JobPhase is where a QuantJob is in its life.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed;Unschedulable
type JobPhase string

const (
	// JobPhasePending: accepted, no run bound yet.
	JobPhasePending JobPhase = "Pending"
	// JobPhaseRunning: at least one run is bound or running.
	JobPhaseRunning JobPhase = "Running"
	// JobPhaseSucceeded: every run finished with a verdict. Finished is not
	// passed: the Passed condition says whether the verdicts are good.
	JobPhaseSucceeded JobPhase = "Succeeded"
	// JobPhaseFailed: retries are exhausted, the deadline passed or the recipe is invalid.
	JobPhaseFailed JobPhase = "Failed"
	// JobPhaseUnschedulable: no node is eligible; the Scheduled condition says why.
	JobPhaseUnschedulable JobPhase = "Unschedulable"
)

// Finished reports whether a job in phase p is done: Succeeded or Failed.
func (p JobPhase) Finished() bool { return p == JobPhaseSucceeded || p == JobPhaseFailed }

// Job condition types.
const (
	// JobConditionScheduled is True when every run the job needs has been bound to
	// a GPU at least once, False with reason Unschedulable (and a message counting
	// why nodes were rejected) when no eligible GPU exists.
	JobConditionScheduled = "Scheduled"
	// JobConditionComplete is True when every run succeeded.
	JobConditionComplete = "Complete"
	// JobConditionFailed is True when the job failed (BackoffLimitExceeded,
	// DisruptionLimitExceeded, DeadlineExceeded, RecipeNotFound, RecipeInvalid, TooManyRuns).
	JobConditionFailed = "Failed"
	// JobConditionPassed is set once the job finished (as Katib separates a
	// finished trial from a passing one). Its reason is the worst verdict of
	// the runs (WorstVerdict): True with reason Pass or Warn, False with
	// reason Fail or Skip, or False with reason Incomplete when the job
	// failed before any run could give a verdict.
	JobConditionPassed = "Passed"
	// JobConditionReferenceBackend is True, with reason ReferenceBackendOnly
	// and the estimated time of one run in its message, while every node a
	// Benchmark job's runs are bound to runs the pure-Go reference backend (no
	// CUDA driver): its timings are CPU time, and a job sized for GPUs takes
	// hours there. It is absent otherwise.
	JobConditionReferenceBackend = "ReferenceBackend"
)

// Job condition reasons.
const (
	ReasonRecipeNotFound       = "RecipeNotFound"
	ReasonRecipeInvalid        = "RecipeInvalid"
	ReasonUnschedulable        = "Unschedulable"
	ReasonAllRunsBound         = "AllRunsBound"
	ReasonWaitingForGPUs       = "WaitingForGPUs"
	ReasonAllRunsSucceeded     = "AllRunsSucceeded"
	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"
	ReasonDeadlineExceeded     = "DeadlineExceeded"
	ReasonNodeLost             = "NodeLost"
	// ReasonDisruptionLimitExceeded (Failed True): more run attempts failed
	// by a disruption than spec.disruptionLimit.
	ReasonDisruptionLimitExceeded = "DisruptionLimitExceeded"
	// ReasonTooManyRuns (Failed True): the placement policy needs more runs
	// than spec.placement.maxRuns; no run was created.
	ReasonTooManyRuns = "TooManyRuns"
	// ReasonIncomplete (Passed False): the job failed before any run gave a
	// verdict.
	ReasonIncomplete = "Incomplete"
	// ReasonReferenceBackendOnly (ReferenceBackend True): every node the
	// job's runs are bound to has only the reference backend.
	ReasonReferenceBackendOnly = "ReferenceBackendOnly"
)

// Stat is the minimum, median and maximum of one metric over a job's succeeded
// runs, as decimal strings.
type Stat struct {
	// min is the smallest value.
	// +optional
	Min string `json:"min,omitempty"`
	// median is the median value.
	// +optional
	Median string `json:"median,omitempty"`
	// max is the largest value.
	// +optional
	Max string `json:"max,omitempty"`
}

// Outlier is a run whose result is more than 3 median absolute deviations worse
// than the fleet median of the same GPU product.
type Outlier struct {
	// run is the QuantRun's name.
	// +required
	Run string `json:"run"`
	// nodeName is the node the run ran on.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// gpuUUID is the GPU the run ran on.
	// +optional
	GPUUUID string `json:"gpuUUID,omitempty"`
	// product is the GPU product name.
	// +optional
	Product string `json:"product,omitempty"`
	// metric is the metric that is off: bandwidthGBps, hostEagerMicros or hostGraphMicros.
	// +required
	Metric string `json:"metric"`
	// value is the run's value of that metric.
	// +optional
	Value string `json:"value,omitempty"`
	// median is the fleet median for that product.
	// +optional
	Median string `json:"median,omitempty"`
}

// VerdictCounts counts the runs of a job by verdict. Zero counts are
// written, so that the PASS, FAIL and WARN columns show 0, not <none>.
type VerdictCounts struct {
	// pass is the number of runs with verdict Pass.
	// +optional
	Pass int32 `json:"pass"`
	// fail is the number of runs with verdict Fail.
	// +optional
	Fail int32 `json:"fail"`
	// warn is the number of runs with verdict Warn.
	// +optional
	Warn int32 `json:"warn"`
	// skip is the number of runs with verdict Skip.
	// +optional
	Skip int32 `json:"skip"`
}

// JobSummary aggregates the results of a job's succeeded runs.
type JobSummary struct {
	// bandwidthGBps summarises performance.bandwidthGBps.
	// +optional
	BandwidthGBps *Stat `json:"bandwidthGBps,omitempty"`
	// gpuMicros summarises performance.gpuMicros.
	// +optional
	GPUMicros *Stat `json:"gpuMicros,omitempty"`
	// hostEagerMicros summarises overhead.hostEagerMicros.
	// +optional
	HostEagerMicros *Stat `json:"hostEagerMicros,omitempty"`
	// hostGraphMicros summarises overhead.hostGraphMicros.
	// +optional
	HostGraphMicros *Stat `json:"hostGraphMicros,omitempty"`
	// snrDB summarises accuracy.snrDB.
	// +optional
	SNRdB *Stat `json:"snrDB,omitempty"`
	// verdicts counts runs by verdict.
	// +optional
	Verdicts VerdictCounts `json:"verdicts,omitempty"`
	// medians mirrors the medians above as JSON numbers, for the printer
	// columns and kubectl --sort-by.
	// +optional
	Medians *ResultNumbers `json:"medians,omitempty"`
	// outliers lists runs far worse than their product's fleet median (needs at
	// least 5 runs of that product).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Outliers []Outlier `json:"outliers,omitempty"`
}

// QuantJobStatus is what the controller observed of a QuantJob.
type QuantJobStatus struct {
	// observedGeneration is the generation that this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase is Pending, Running, Succeeded, Failed or Unschedulable.
	// +optional
	Phase JobPhase `json:"phase,omitempty"`

	// total is the number of runs the job needs.
	// +optional
	Total int32 `json:"total"`
	// pending is the number of runs not yet bound to a GPU.
	// +optional
	Pending int32 `json:"pending"`
	// running is the number of runs bound or running.
	// +optional
	Running int32 `json:"running"`
	// succeeded is the number of runs that succeeded.
	// +optional
	Succeeded int32 `json:"succeeded"`
	// failed is the number of run attempts that failed by their own doing
	// (a crash, an OOM kill, a timeout), retried or not; bounded by
	// spec.backoffLimit.
	// +optional
	Failed int32 `json:"failed"`
	// disruptions is the number of run attempts that failed by a disruption
	// (a lost node, an eviction, a preemption, another process on the GPU),
	// retried or not; bounded by spec.disruptionLimit.
	// +optional
	Disruptions int32 `json:"disruptions"`
	// waitingForGPU is the number of runs that wait because the GPUs they
	// may use are allocated to other pods (their reason is WaitingForGPU):
	// kquant never runs beside another workload, it waits for a free GPU.
	// +optional
	WaitingForGPU int32 `json:"waitingForGPU"`
	// progress is "succeeded/total", for kubectl get.
	// +optional
	Progress string `json:"progress,omitempty"`

	// summary aggregates the succeeded runs' results.
	// +optional
	Summary *JobSummary `json:"summary,omitempty"`

	// startTime is when the first run was bound.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime is when the job succeeded or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// conditions: Scheduled, Complete and Failed.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// QuantJob asks kquant to benchmark or validate a recipe on a workload, on one
// GPU, every node or every GPU of the fleet.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=qj,categories=kquant
// +kubebuilder:printcolumn:name="Recipe",type=string,JSONPath=`.spec.recipeRef.name`,description="The recipe the job runs."
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`,description="Validation or Benchmark."
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.progress`,description="Succeeded runs over the runs the job needs."
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="Whether the job finished; the Passed condition says whether it passed."
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failed`,priority=1,description="Run attempts that failed by their own doing (bounded by backoffLimit)."
// +kubebuilder:printcolumn:name="Disruptions",type=integer,JSONPath=`.status.disruptions`,priority=1,description="Run attempts lost to a disruption (bounded by disruptionLimit)."
// +kubebuilder:printcolumn:name="Waiting-GPU",type=integer,JSONPath=`.status.waitingForGPU`,description="Runs waiting for a GPU that another pod holds."
// +kubebuilder:printcolumn:name="Pass",type=integer,JSONPath=`.status.summary.verdicts.pass`,description="Runs with verdict Pass."
// +kubebuilder:printcolumn:name="Fail",type=integer,JSONPath=`.status.summary.verdicts.fail`,description="Runs with verdict Fail: a tolerance was violated."
// +kubebuilder:printcolumn:name="Warn",type=integer,JSONPath=`.status.summary.verdicts.warn`,description="Runs with verdict Warn."
// +kubebuilder:printcolumn:name="Passed",type=string,JSONPath=`.status.conditions[?(@.type=="Passed")].reason`,priority=1,description="The worst verdict, once the job finished."
// +kubebuilder:printcolumn:name="Usage",type=string,JSONPath=`.spec.workload.usage`,priority=1,description="Which operands the step produces: Rowwise, Columnwise or Both."
// +kubebuilder:printcolumn:name="GB/s",type=number,JSONPath=`.status.summary.medians.bandwidthGBps`,priority=1,description="Median bandwidth over the runs, GB/s."
// +kubebuilder:printcolumn:name="Eager-us",type=number,JSONPath=`.status.summary.medians.hostEagerMicros`,priority=1,description="Median host time of one eager step, microseconds."
// +kubebuilder:printcolumn:name="Graph-us",type=number,JSONPath=`.status.summary.medians.hostGraphMicros`,priority=1,description="Median host time of one CUDA-graph replay, microseconds."
// +kubebuilder:printcolumn:name="SNR-dB",type=number,JSONPath=`.status.summary.medians.snrDB`,priority=1,description="Median signal-to-noise ratio, dB."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type QuantJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what to run and where.
	// +required
	Spec QuantJobSpec `json:"spec"`

	// status is written by the controller.
	// +optional
	Status QuantJobStatus `json:"status,omitempty"`
}

// IsCluster reports whether ref names a ClusterQuantRecipe.
func (ref RecipeReference) IsCluster() bool { return ref.Kind == RecipeKindCluster }
