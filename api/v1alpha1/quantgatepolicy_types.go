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

// GateActions say what a gate does to a node whose validation failed. Each
// action is a field of its own, so that further ones (a Node condition) sit
// beside them.
// +kubebuilder:validation:XValidation:rule="self.label || has(self.taint)",message="spec.actions needs label: true or a taint"
type GateActions struct {
	// label sets gate.kquant.dev/<family>=failed, so that training pods can
	// avoid the node with a nodeAffinity `DoesNotExist` term.
	// +optional
	Label bool `json:"label,omitempty"`

	// taint, when set, taints the node with gate.kquant.dev/<family>=failed
	// and its effect.
	// +optional
	Taint *GateTaint `json:"taint,omitempty"`
}

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

	// actions are what the gate does to a node that fails.
	// +required
	Actions GateActions `json:"actions"`
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

// LabelGatePolicy labels a QuantGatePolicy's QuantJobs with its name.
const LabelGatePolicy = "kquant.dev/gate-policy"

// AnnotationGateOwners records on a Node which QuantGatePolicy owns each gate
// key, and which marks it set (GateOwners, as JSON): a gate removes only what
// its record says it set, never a label or taint of a person or another policy.
const AnnotationGateOwners = "kquant.dev/gate-owners"

// QuantGatePolicy validates the fleet with a ClusterQuantRecipe and gates the
// nodes that fail: a label and/or taint gate.kquant.dev/<family>=failed, set
// and cleared by kquant alone. It is cluster-scoped, because only the
// platform may change Nodes; its validation QuantJobs live in the manager's
// namespace, controlled by the policy.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=qgp,categories=kquant
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 52",message="metadata.name of a QuantGatePolicy is at most 52 characters: it prefixes its jobs' names"
// +kubebuilder:printcolumn:name="Recipe",type=string,JSONPath=`.spec.recipeRef.name`,description="The ClusterQuantRecipe the policy validates."
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
