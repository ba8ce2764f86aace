// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterRecipeReference names a ClusterQuantRecipe. A gate policy takes only
// the cluster's catalog: a tenant's namespaced QuantRecipe must never decide
// what happens to a Node.
type ClusterRecipeReference struct {
	// name is the ClusterQuantRecipe's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// GateValidation is the validation a QuantGatePolicy runs: the part of a
// QuantJob's spec that a platform admin chooses. The mode is always
// Validation.
// +kubebuilder:validation:XValidation:rule="self.placement.policy != 'AnyGPU'",message="spec.validation.placement.policy must be EachGPU or EachNode: a gate judges every node it validates",fieldPath=".placement.policy"
type GateValidation struct {
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

	// placement chooses nodes and GPUs. Default: every GPU (EachGPU).
	// +optional
	// +kubebuilder:default={policy: EachGPU}
	Placement Placement `json:"placement,omitempty"`

	// tolerances decide each run's verdict, and so which nodes are gated.
	// +optional
	Tolerances Tolerances `json:"tolerances,omitempty"`

	// activeDeadlineSeconds fails a validation job (and its active runs) when
	// it has been running this long. At most 7 days.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=604800
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
}

// GateTaint is a gate's taint action.
type GateTaint struct {
	// effect is NoSchedule (default), PreferNoSchedule or NoExecute. NoExecute
	// evicts every pod on the node that does not tolerate the gate: only a
	// policy that names it gets it.
	// +optional
	// +kubebuilder:default=NoSchedule
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
	Effect corev1.TaintEffect `json:"effect,omitempty"`
}

// GateActions say what a gate does to a node whose validation failed: a
// Node condition (the default), a label, a taint, or any mix of them. Each
// action is a field of its own.
// +kubebuilder:validation:XValidation:rule="(has(self.condition) && self.condition) || self.label || has(self.taint)",message="spec.actions needs condition: true, label: true or a taint"
type GateActions struct {
	// condition sets the Node condition kquant.dev/<Family>Validated (for
	// example kquant.dev/FP8Validated): False with the failing run's verdict
	// reason while the gate holds, True once the policy's validation passes,
	// Unknown (reason ValidationStale) when the node has not passed within
	// spec.period. Remediation controllers such as Medik8s NodeHealthCheck act
	// on it. Default: true.
	// +optional
	// +kubebuilder:default=true
	Condition *bool `json:"condition,omitempty"`

	// label sets gate.kquant.dev/<family>=failed, so that training pods can
	// avoid the node with a nodeAffinity `DoesNotExist` term.
	// +optional
	Label bool `json:"label,omitempty"`

	// taint, when set, taints the node with gate.kquant.dev/<family>=failed
	// and its effect.
	// +optional
	Taint *GateTaint `json:"taint,omitempty"`
}

// ConditionEnabled reports whether the actions set the Node condition: unset
// means the API's default, true.
func (a GateActions) ConditionEnabled() bool { return a.Condition == nil || *a.Condition }

// QuantGatePolicySpec is the validation that gates nodes, and what a gate does.
type QuantGatePolicySpec struct {
	// recipeRef names the ClusterQuantRecipe to validate. Its family (fp8,
	// fp8-block, mxfp8, nvfp4) names the gate's key, gate.kquant.dev/<family>.
	// +required
	RecipeRef ClusterRecipeReference `json:"recipeRef"`

	// validation is the validation job's settings.
	// +required
	Validation GateValidation `json:"validation"`

	// period, when set, re-validates every node this often (a Go duration,
	// between 10m and 8760h); unset, the policy validates once per generation.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10m') && duration(self) <= duration('8760h')",message="spec.period must be between 10m and 8760h"
	Period *metav1.Duration `json:"period,omitempty"`

	// actions are what the gate does to a node that fails. Default: the Node
	// condition only.
	// +optional
	// +kubebuilder:default={condition: true}
	Actions GateActions `json:"actions,omitempty"`

	// idleValidation, when set, also validates each node whose GPUs the
	// kubelet has left idle: a node whose every GPU has been free (no
	// container holds it, MIG slice, shared replica or DRA claim included;
	// the agent's status.gpus[].freeSince) for idleValidation.idleFor gets a
	// validation job of its own, at the lowest priority and never
	// preempting, so any workload that wants a GPU takes it back.
	// +optional
	IdleValidation *IdleValidation `json:"idleValidation,omitempty"`
}

// IdleValidation asks for validation of GPUs that have been idle for a while:
// the time a fleet's GPUs sit unallocated is spent checking them, and a
// workload that wants one preempts the check.
type IdleValidation struct {
	// idleFor is how long every GPU of a node must have been free in the
	// kubelet's allocations before the node is validated (a Go duration,
	// between 1m and 168h).
	// +required
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('168h')",message="spec.idleValidation.idleFor must be between 1m and 168h"
	IdleFor metav1.Duration `json:"idleFor"`

	// interval is the least time between the starts of two idle validations
	// of one node (a Go duration, between 10m and 8760h; default 1h), so
	// that a node left idle is not revalidated constantly.
	// +optional
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10m') && duration(self) <= duration('8760h')",message="spec.idleValidation.interval must be between 10m and 8760h"
	Interval *metav1.Duration `json:"interval,omitempty"`
}

// GatedNode is one gate a policy holds on a node: the node's key and the GPU
// and run that caused it.
type GatedNode struct {
	// node is the Node's name.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node"`
	// family is the recipe family (fp8, fp8-block, mxfp8, nvfp4); the key is
	// gate.kquant.dev/<family>.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Family string `json:"family"`
	// gpu is the UUID of the GPU whose validation failed.
	// +optional
	GPU string `json:"gpu,omitempty"`
	// run is the QuantRun (in the manager's namespace) that failed.
	// +optional
	Run string `json:"run,omitempty"`
	// since is when the gate was set.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
}

// QuantGatePolicyStatus is what the controller observed of a QuantGatePolicy.
type QuantGatePolicyStatus struct {
	// observedGeneration is the generation that this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// jobNamespace is the namespace of the policy's QuantJobs: the manager's own.
	// +optional
	JobNamespace string `json:"jobNamespace,omitempty"`
	// currentJob is the validation QuantJob still running, if any.
	// +optional
	CurrentJob string `json:"currentJob,omitempty"`
	// lastJob is the latest finished validation QuantJob.
	// +optional
	LastJob string `json:"lastJob,omitempty"`
	// lastValidationTime is when the latest validation job was created.
	// +optional
	LastValidationTime *metav1.Time `json:"lastValidationTime,omitempty"`

	// gatedCount is how many gates the policy holds on nodes (gatedNodes may
	// list fewer).
	// +optional
	GatedCount int32 `json:"gatedCount"`
	// gatedNodes are the gates the policy holds, by node name, at most 1000.
	// +optional
	// +listType=map
	// +listMapKey=node
	// +listMapKey=family
	// +kubebuilder:validation:MaxItems=1000
	GatedNodes []GatedNode `json:"gatedNodes,omitempty"`

	// conditions: Ready and Conflict.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Gate policy condition types.
const (
	// GatePolicyConditionReady is True while the policy's recipe exists and
	// its validation is created; False with reason RecipeNotFound otherwise.
	GatePolicyConditionReady = "Ready"
	// GatePolicyConditionConflict is True (reason KeyHeldByOlderPolicy) when
	// an older policy gates the same key: on a node where that policy holds
	// the key, this one sets nothing and says so in an Event.
	GatePolicyConditionConflict = "Conflict"
)

// Gate policy condition reasons.
const (
	// ReasonValidating (Ready True): the recipe exists and the policy's
	// validation jobs are created as the spec and period say.
	ReasonValidating = "Validating"
	// ReasonKeyHeldByOlderPolicy (Conflict True): an older policy validates a
	// recipe of the same family, so the two share a gate key.
	ReasonKeyHeldByOlderPolicy = "KeyHeldByOlderPolicy"
	// ReasonNoConflict (Conflict False): no older policy shares the key.
	ReasonNoConflict = "NoConflict"
)

// Node condition of a gate (spec.actions.condition): one type per recipe
// family, kquant.dev/<Family>Validated, so that two policies of one family
// share it as they share the gate key, and a remediation rule names the
// numerics it cares about, not a policy's name.
const (
	// NodeConditionPrefix starts every kquant Node condition type: the
	// manager's admission fence lets it change only conditions of kquant's
	// prefixes.
	NodeConditionPrefix = "kquant.dev/"
	// NodeConditionSuffix ends a gate's Node condition type.
	NodeConditionSuffix = "Validated"
)

// Reasons of a gate's Node condition that are not a run's verdict reason
// (status.results.reason of the run that decided it, SNRBelowTolerance for
// example, is the reason when the run has one).
const (
	// NodeReasonValidationFailed (False): the policy's latest run on some GPU
	// of the node failed, and it gave no reason of its own.
	NodeReasonValidationFailed = "ValidationFailed"
	// NodeReasonValidationPassed (True): the policy's latest runs passed on
	// every GPU, and the deciding run gave no reason of its own.
	NodeReasonValidationPassed = "ValidationPassed"
	// NodeReasonValidationStale (Unknown): the node last passed longer ago
	// than the policy's spec.period; an old pass says nothing of today.
	NodeReasonValidationStale = "ValidationStale"
)

// AnnotationGateConditions records on a Node which QuantGatePolicy set each
// of kquant's Node conditions there (gateowners.Conditions, as JSON): a
// condition of a gate's type without an entry is someone else's, left alone.
const AnnotationGateConditions = "kquant.dev/gate-conditions"

// LabelGatePolicy labels a QuantGatePolicy's QuantJobs with its name.
const LabelGatePolicy = "kquant.dev/gate-policy"

// LabelIdleValidation marks a QuantJob (and its runs, which inherit it) as a
// policy's idle validation (spec.idleValidation): its run pods take the idle
// PriorityClass, the lowest, and a preempted run is not retried. Its value is
// "true".
const LabelIdleValidation = "kquant.dev/idle-validation"

// IsIdleValidation reports whether obj (a QuantJob or a QuantRun) belongs
// to a policy's idle validation.
func IsIdleValidation(obj metav1.Object) bool {
	return obj.GetLabels()[LabelIdleValidation] == "true"
}

// AnnotationIdleNode names the Node an idle validation QuantJob validates:
// a Node's name may be longer than a label value.
const AnnotationIdleNode = "kquant.dev/idle-node"

// AnnotationGateOwners records on a Node which QuantGatePolicy owns each gate
// key, and which marks it set (GateOwners, as JSON): a gate removes only what
// its record says it set, never a label or taint of a person or another policy.
const AnnotationGateOwners = "kquant.dev/gate-owners"

// QuantGatePolicy validates the fleet with a ClusterQuantRecipe and gates the
// nodes that fail: a Node condition kquant.dev/<Family>Validated, a label
// and/or a taint gate.kquant.dev/<family>=failed, set and cleared by kquant
// alone. It is cluster-scoped, because only the
// platform may change Nodes; its validation QuantJobs live in the manager's
// namespace, controlled by the policy.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=qgp,categories=kquant
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 52",message="metadata.name of a QuantGatePolicy is at most 52 characters: it prefixes its jobs' names"
// +kubebuilder:printcolumn:name="Recipe",type=string,JSONPath=`.spec.recipeRef.name`,description="The ClusterQuantRecipe the policy validates."
// +kubebuilder:printcolumn:name="Condition",type=boolean,JSONPath=`.spec.actions.condition`,description="Whether a gate sets the Node condition kquant.dev/<Family>Validated."
// +kubebuilder:printcolumn:name="Label",type=boolean,JSONPath=`.spec.actions.label`,description="Whether a gate sets the label."
// +kubebuilder:printcolumn:name="Taint",type=string,JSONPath=`.spec.actions.taint.effect`,description="The effect of the gate's taint, if any."
// +kubebuilder:printcolumn:name="Period",type=string,JSONPath=`.spec.period`,description="How often every node is re-validated."
// +kubebuilder:printcolumn:name="Gated",type=integer,JSONPath=`.status.gatedCount`,description="Gates the policy holds on nodes."
// +kubebuilder:printcolumn:name="Last-Job",type=string,JSONPath=`.status.lastJob`,description="The latest finished validation job."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type QuantGatePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what to validate and what a gate does.
	// +required
	Spec QuantGatePolicySpec `json:"spec"`

	// status is written by the controller.
	// +optional
	Status QuantGatePolicyStatus `json:"status,omitempty"`
}
