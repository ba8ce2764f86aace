// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Scheme names a quantization recipe family with TransformerEngine's semantics.
// +kubebuilder:validation:Enum=DelayedScaling;Float8CurrentScaling;Float8BlockScaling;MXFP8BlockScaling;NVFP4BlockScaling
type Scheme string

const (
	// SchemeDelayedScaling is FP8 with one scale per tensor taken from an amax history.
	SchemeDelayedScaling Scheme = "DelayedScaling"
	// SchemeFloat8CurrentScaling is FP8 with one scale per tensor from this tensor's amax.
	SchemeFloat8CurrentScaling Scheme = "Float8CurrentScaling"
	// SchemeFloat8BlockScaling is FP8 with float32 scales per 1x128 block (128x128 for weights).
	SchemeFloat8BlockScaling Scheme = "Float8BlockScaling"
	// SchemeMXFP8BlockScaling is FP8 with E8M0 scales per 32 elements (OCP MX).
	SchemeMXFP8BlockScaling Scheme = "MXFP8BlockScaling"
	// SchemeNVFP4BlockScaling is E2M1 with E4M3 scales per 16 elements and a float32 tensor scale.
	SchemeNVFP4BlockScaling Scheme = "NVFP4BlockScaling"
)

// Schemes lists every scheme in a stable order.
var Schemes = []Scheme{
	SchemeDelayedScaling, SchemeFloat8CurrentScaling, SchemeFloat8BlockScaling,
	SchemeMXFP8BlockScaling, SchemeNVFP4BlockScaling,
}

// Format is the element format of a recipe.
// E5M2 is listed so that the API server can refuse it with a message that says
// why (TransformerEngine refuses pure E5M2 for every FP8 recipe).
// +kubebuilder:validation:Enum=E4M3;HYBRID;E5M2;E2M1
type Format string

const (
	// FormatE4M3 uses E4M3 for every tensor.
	FormatE4M3 Format = "E4M3"
	// FormatHybrid uses E4M3 for forward tensors (inputs, weights) and E5M2 for gradients.
	FormatHybrid Format = "HYBRID"
	// FormatE5M2 is refused at admission; it exists only to be named in that refusal.
	FormatE5M2 Format = "E5M2"
	// FormatE2M1 is NVFP4's element format and valid only with NVFP4BlockScaling.
	FormatE2M1 Format = "E2M1"
)

// AmaxComputeAlgo picks the amax that delayed scaling derives its scale from.
// +kubebuilder:validation:Enum=max;most_recent
type AmaxComputeAlgo string

const (
	// AmaxComputeMax takes the maximum over the whole amax history.
	AmaxComputeMax AmaxComputeAlgo = "max"
	// AmaxComputeMostRecent takes the most recent amax only.
	AmaxComputeMostRecent AmaxComputeAlgo = "most_recent"
)

// ScaleRounding picks how an MXFP8 block's E8M0 scale exponent is rounded.
// +kubebuilder:validation:Enum=TE;OCP
type ScaleRounding string

const (
	// ScaleRoundingTE rounds the exponent up, so that no element saturates (TransformerEngine).
	ScaleRoundingTE ScaleRounding = "TE"
	// ScaleRoundingOCP uses floor(log2(amax)) - emax (OCP MX v1.0); large elements saturate.
	ScaleRoundingOCP ScaleRounding = "OCP"
)

// NVFP4TensorScope selects NVFP4 tensors by role, as TransformerEngine's 4over6
// options do: weights, activations (inputs) or all (both). Gradients are never
// selected.
// +kubebuilder:validation:Enum=none;weights;activations;all
type NVFP4TensorScope string

const (
	// NVFP4ScopeNone selects no tensor.
	NVFP4ScopeNone NVFP4TensorScope = "none"
	// NVFP4ScopeWeights selects weights.
	NVFP4ScopeWeights NVFP4TensorScope = "weights"
	// NVFP4ScopeActivations selects inputs.
	NVFP4ScopeActivations NVFP4TensorScope = "activations"
	// NVFP4ScopeAll selects weights and inputs.
	NVFP4ScopeAll NVFP4TensorScope = "all"
)

// FourOverSixErrorMode is the error measure by which an NVFP4 4over6 block
// chooses its scale.
// +kubebuilder:validation:Enum=MAE;MSE
type FourOverSixErrorMode string

const (
	// FourOverSixMAE sums the absolute errors of the block.
	FourOverSixMAE FourOverSixErrorMode = "MAE"
	// FourOverSixMSE sums the squared errors of the block.
	FourOverSixMSE FourOverSixErrorMode = "MSE"
)

// DelayedScalingOptions tunes DelayedScaling.
type DelayedScalingOptions struct {
	// margin is the number of powers of two of headroom: scale = fp8_max * 2^-margin / amax.
	// TransformerEngine's default is 0.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=32
	Margin *int32 `json:"margin,omitempty"`

	// amaxHistoryLen is the number of past amax values kept per tensor.
	// TransformerEngine's default is 1024.
	// +optional
	// +kubebuilder:default=1024
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	AmaxHistoryLen *int32 `json:"amaxHistoryLen,omitempty"`

	// amaxComputeAlgo is "max" (the maximum over the history, the default) or
	// "most_recent" (the last step's amax).
	// +optional
	// +kubebuilder:default=max
	AmaxComputeAlgo AmaxComputeAlgo `json:"amaxComputeAlgo,omitempty"`
}

// CurrentScalingOptions tunes Float8CurrentScaling.
type CurrentScalingOptions struct {
	// power2Scales rounds each scale down to a power of two. Off by default.
	// +optional
	// +kubebuilder:default=false
	Power2Scales *bool `json:"power2Scales,omitempty"`

	// amaxEpsilon is a lower bound applied to the amax before the scale is computed,
	// as a decimal string (for example "0" or "1e-12"). Default "0".
	// +optional
	// +kubebuilder:default="0"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$`
	AmaxEpsilon string `json:"amaxEpsilon,omitempty"`
}

// BlockScalingOptions tunes Float8BlockScaling.
type BlockScalingOptions struct {
	// power2Scales rounds each block scale down to a power of two. On by default,
	// and required on compute capability 10.0 and newer, where block scaling runs
	// emulated through MXFP8. false is TransformerEngine's
	// NVTE_FP8_BLOCK_SCALING_FP32_SCALES=1 (float32 scales for every role).
	// +optional
	// +kubebuilder:default=true
	Power2Scales *bool `json:"power2Scales,omitempty"`
}

// MXFP8Options tunes MXFP8BlockScaling.
type MXFP8Options struct {
	// scaleRounding is TE (round the exponent up, the default) or OCP (OCP MX v1.0).
	// +optional
	// +kubebuilder:default=TE
	ScaleRounding ScaleRounding `json:"scaleRounding,omitempty"`

	// twoDimensionalWeights uses 32x32 blocks for weight tensors. Off by default.
	// +optional
	// +kubebuilder:default=false
	TwoDimensionalWeights *bool `json:"twoDimensionalWeights,omitempty"`
}

// NVFP4Options tunes NVFP4BlockScaling. TransformerEngine turns the three
// transforms on and 4over6 and row scaling off.
//
// +kubebuilder:validation:XValidation:rule="!has(self.fourOverSix) || !(self.fourOverSix in ['activations', 'all']) || (has(self.randomHadamardTransform) && !self.randomHadamardTransform)",message="spec.nvfp4.fourOverSix: NVFP4 4over6 quantization does not support RHT (TransformerEngine: pre-training paths that combine 4over6 with RHT are not yet implemented); set randomHadamardTransform to false or fourOverSix to weights",fieldPath=".fourOverSix"
// +kubebuilder:validation:XValidation:rule="!has(self.rowScaledActivation) || !self.rowScaledActivation || (has(self.randomHadamardTransform) && !self.randomHadamardTransform)",message="spec.nvfp4.rowScaledActivation: row-scaled NVFP4 quantization does not support RHT (TransformerEngine); set randomHadamardTransform to false",fieldPath=".rowScaledActivation"
type NVFP4Options struct {
	// randomHadamardTransform applies a 16-point random Hadamard transform to the
	// columnwise operand of inputs and gradients before quantizing. Default true.
	// +optional
	// +kubebuilder:default=true
	RandomHadamardTransform *bool `json:"randomHadamardTransform,omitempty"`

	// stochasticRounding rounds gradients stochastically (Philox 4x32-10, seeded by
	// the run). Default true.
	// +optional
	// +kubebuilder:default=true
	StochasticRounding *bool `json:"stochasticRounding,omitempty"`

	// twoDimensionalWeights uses 16x16 blocks for weight tensors. Default true.
	// +optional
	// +kubebuilder:default=true
	TwoDimensionalWeights *bool `json:"twoDimensionalWeights,omitempty"`

	// fourOverSix is TransformerEngine's nvfp4_4over6: the tensors (none,
	// weights, activations or all; never gradients) whose every block keeps the
	// better of two scales, map-to-6 and a 1.5 times larger map-to-4, by
	// fourOverSixErrorMode. Activations need randomHadamardTransform false.
	// Default none.
	// +optional
	// +kubebuilder:default=none
	FourOverSix NVFP4TensorScope `json:"fourOverSix,omitempty"`

	// fourOverSixErrorMode is the error measure of that choice: MAE (the
	// default) or MSE. Read only when fourOverSix is not none.
	// +optional
	// +kubebuilder:default=MAE
	FourOverSixErrorMode FourOverSixErrorMode `json:"fourOverSixErrorMode,omitempty"`

	// fourOverSixE4M3Bound256 is TransformerEngine's nvfp4_4over6_e4m3_use_256:
	// the 4over6 tensors whose tensor scale uses 256 instead of 448 as the E4M3
	// bound, leaving room for the larger map-to-4 scale. Default all. Read only
	// when fourOverSix is not none.
	// +optional
	// +kubebuilder:default=all
	FourOverSixE4M3Bound256 NVFP4TensorScope `json:"fourOverSixE4M3Bound256,omitempty"`

	// rowScaledActivation is TransformerEngine's row_scaled_activation: inputs
	// get one float32 tensor scale per row and only a rowwise operand (runs must
	// use usage Rowwise for them). Needs randomHadamardTransform false. Default
	// false.
	// +optional
	// +kubebuilder:default=false
	RowScaledActivation *bool `json:"rowScaledActivation,omitempty"`
}

// QuantRecipeSpec describes a quantization recipe with TransformerEngine's
// semantics. Options left out take TransformerEngine's defaults.
//
// +kubebuilder:validation:XValidation:rule="!has(self.format) || self.format != 'E5M2'",message="spec.format: E5M2 is not supported (TransformerEngine refuses pure E5M2 for every FP8 recipe); use E4M3 or HYBRID",fieldPath=".format"
// +kubebuilder:validation:XValidation:rule="!has(self.format) || (self.scheme == 'NVFP4BlockScaling') == (self.format == 'E2M1')",message="spec.format: NVFP4BlockScaling takes only format E2M1, and E2M1 is valid only with NVFP4BlockScaling",fieldPath=".format"
// +kubebuilder:validation:XValidation:rule="!has(self.delayedScaling) || self.scheme == 'DelayedScaling'",message="spec.delayedScaling is allowed only with scheme DelayedScaling",fieldPath=".delayedScaling"
// +kubebuilder:validation:XValidation:rule="!has(self.currentScaling) || self.scheme == 'Float8CurrentScaling'",message="spec.currentScaling is allowed only with scheme Float8CurrentScaling",fieldPath=".currentScaling"
// +kubebuilder:validation:XValidation:rule="!has(self.blockScaling) || self.scheme == 'Float8BlockScaling'",message="spec.blockScaling is allowed only with scheme Float8BlockScaling",fieldPath=".blockScaling"
// +kubebuilder:validation:XValidation:rule="!has(self.mxfp8) || self.scheme == 'MXFP8BlockScaling'",message="spec.mxfp8 is allowed only with scheme MXFP8BlockScaling",fieldPath=".mxfp8"
// +kubebuilder:validation:XValidation:rule="!has(self.nvfp4) || self.scheme == 'NVFP4BlockScaling'",message="spec.nvfp4 is allowed only with scheme NVFP4BlockScaling",fieldPath=".nvfp4"
type QuantRecipeSpec struct {
	// scheme is the recipe family: DelayedScaling, Float8CurrentScaling,
	// Float8BlockScaling, MXFP8BlockScaling or NVFP4BlockScaling.
	// +required
	Scheme Scheme `json:"scheme"`

	// format is the element format. FP8 schemes take E4M3 or HYBRID (E4M3 forward,
	// E5M2 gradients); NVFP4BlockScaling takes E2M1. When left out it is
	// TransformerEngine's default: HYBRID for DelayedScaling and
	// Float8CurrentScaling, E4M3 for Float8BlockScaling and MXFP8BlockScaling, E2M1
	// for NVFP4BlockScaling. status.format shows the effective value.
	// +optional
	Format Format `json:"format,omitempty"`

	// delayedScaling holds the options of DelayedScaling; only with that scheme.
	// +optional
	DelayedScaling *DelayedScalingOptions `json:"delayedScaling,omitempty"`

	// currentScaling holds the options of Float8CurrentScaling; only with that scheme.
	// +optional
	CurrentScaling *CurrentScalingOptions `json:"currentScaling,omitempty"`

	// blockScaling holds the options of Float8BlockScaling; only with that scheme.
	// +optional
	BlockScaling *BlockScalingOptions `json:"blockScaling,omitempty"`

	// mxfp8 holds the options of MXFP8BlockScaling; only with that scheme.
	// +optional
	MXFP8 *MXFP8Options `json:"mxfp8,omitempty"`

	// nvfp4 holds the options of NVFP4BlockScaling; only with that scheme.
	// +optional
	NVFP4 *NVFP4Options `json:"nvfp4,omitempty"`
}

// RecipeNodeCounts counts Ready nodes by how they support a recipe.
type RecipeNodeCounts struct {
	// native is the number of Ready nodes with at least one GPU that runs the
	// recipe's GEMM natively.
	// +optional
	Native int32 `json:"native"`

	// emulated is the number of Ready nodes that can quantize and validate the
	// recipe but have no GPU with a native GEMM for it.
	// +optional
	Emulated int32 `json:"emulated"`
}

// QuantRecipeStatus is what the controller observed of a QuantRecipe.
type QuantRecipeStatus struct {
	// observedGeneration is the generation that this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// key is the canonical text of the effective recipe: every option with its
	// default filled in, in a fixed order. Two recipes with the same key behave
	// identically. It is computed once per generation.
	// +optional
	Key string `json:"key,omitempty"`

	// format is the effective element format (spec.format or the scheme's default).
	// +optional
	Format Format `json:"format,omitempty"`

	// nodes counts the Ready nodes that support this recipe natively or emulated.
	// +optional
	Nodes RecipeNodeCounts `json:"nodes,omitempty"`

	// conditions: Ready is True once the recipe has been validated and its key computed.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// QuantRecipe is a low-precision quantization recipe with TransformerEngine's
// semantics, referenced by QuantJobs.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=qr,categories=kquant
// +kubebuilder:printcolumn:name="Scheme",type=string,JSONPath=`.spec.scheme`
// +kubebuilder:printcolumn:name="Format",type=string,JSONPath=`.status.format`
// +kubebuilder:printcolumn:name="Native",type=integer,JSONPath=`.status.nodes.native`
// +kubebuilder:printcolumn:name="Emulated",type=integer,JSONPath=`.status.nodes.emulated`
// +kubebuilder:printcolumn:name="Key",type=string,JSONPath=`.status.key`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type QuantRecipe struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec describes the recipe.
	// +required
	Spec QuantRecipeSpec `json:"spec"`

	// status is written by the controller.
	// +optional
	Status QuantRecipeStatus `json:"status,omitempty"`
}
