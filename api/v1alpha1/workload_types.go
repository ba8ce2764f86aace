// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

// Operation is what a run does with the recipe.
// +kubebuilder:validation:Enum=Quantize;GroupedQuantize;QuantizedLinear
type Operation string

const (
	// OperationQuantize quantizes each shape as one tensor.
	OperationQuantize Operation = "Quantize"
	// OperationGroupedQuantize splits each [T, H] shape along its rows into groups
	// (mixture-of-experts style) whose split sizes live on the device.
	OperationGroupedQuantize Operation = "GroupedQuantize"
	// OperationQuantizedLinear quantizes an input and a weight, multiplies them and
	// reports how much the output moved against the unquantized product.
	OperationQuantizedLinear Operation = "QuantizedLinear"
)

// DType is the element type of the generated input.
// +kubebuilder:validation:Enum=BF16;FP16;FP32
type DType string

const (
	// DTypeBF16 is bfloat16.
	DTypeBF16 DType = "BF16"
	// DTypeFP16 is IEEE half precision.
	DTypeFP16 DType = "FP16"
	// DTypeFP32 is IEEE single precision.
	DTypeFP32 DType = "FP32"
)

// TensorRole is the role of the quantized tensor in training; it decides the
// element format under HYBRID, 2D blocks for weights and NVFP4's transforms.
// +kubebuilder:validation:Enum=Input;Weight;Gradient
type TensorRole string

const (
	// TensorRoleInput is an activation in the forward pass.
	TensorRoleInput TensorRole = "Input"
	// TensorRoleWeight is a weight.
	TensorRoleWeight TensorRole = "Weight"
	// TensorRoleGradient is a gradient in the backward pass.
	TensorRoleGradient TensorRole = "Gradient"
)

// Usage is which operands a quantize step produces (TransformerEngine's
// rowwise and columnwise usage).
// +kubebuilder:validation:Enum=Rowwise;Columnwise;Both
type Usage string

const (
	// UsageRowwise produces only the rowwise operand (the input's layout,
	// blocks along rows): what inference needs.
	UsageRowwise Usage = "Rowwise"
	// UsageColumnwise produces only the columnwise operand (blocks along
	// columns; transposed data except for MXFP8): the other half of training.
	UsageColumnwise Usage = "Columnwise"
	// UsageBoth produces both operands, as training's forward and backward
	// GEMMs need.
	UsageBoth Usage = "Both"
)

// Distribution is the distribution the input is drawn from.
// +kubebuilder:validation:Enum=Normal;Uniform;HeavyTailed
type Distribution string

const (
	// DistributionNormal is the standard normal distribution.
	DistributionNormal Distribution = "Normal"
	// DistributionUniform is uniform on [-1, 1).
	DistributionUniform Distribution = "Uniform"
	// DistributionHeavyTailed has rare large outliers, like real activations.
	DistributionHeavyTailed Distribution = "HeavyTailed"
)

// SplitPolicy decides how a grouped tensor's rows are split into groups.
// +kubebuilder:validation:Enum=Uniform;Random;Explicit
type SplitPolicy string

const (
	// SplitUniform gives every group the same number of rows.
	SplitUniform SplitPolicy = "Uniform"
	// SplitRandom draws aligned split sizes from groups.seed.
	SplitRandom SplitPolicy = "Random"
	// SplitExplicit takes the split sizes from groups.sizes.
	SplitExplicit SplitPolicy = "Explicit"
)

// GraphMode is how a run executes each step.
// +kubebuilder:validation:Enum=Eager;Graph;Both
type GraphMode string

const (
	// GraphModeEager launches each kernel of a step directly.
	GraphModeEager GraphMode = "Eager"
	// GraphModeGraph captures a step into a CUDA graph once and replays it.
	GraphModeGraph GraphMode = "Graph"
	// GraphModeBoth measures both and checks that replay matches eager bytes.
	GraphModeBoth GraphMode = "Both"
)

// Shape is a 2D tensor shape: rows is the product of the leading dimensions
// (M, or T tokens for grouped tensors) and cols the last dimension (K, or H).
// Block formats need no alignment: a shape that is not a multiple of the block
// (32 for MXFP8, 16 for NVFP4, 128 for block scaling) is padded as
// TransformerEngine pads, and the padding shows in the results' scale shapes.
type Shape struct {
	// rows is the number of rows (M): the product of all leading dimensions.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1048576
	Rows int64 `json:"rows"`

	// cols is the number of columns (K): the last, contiguous dimension.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1048576
	Cols int64 `json:"cols"`

	// outFeatures is N, the weight's row count, for QuantizedLinear only
	// (y[M,N] = x[M,K] * W[N,K]^T). Defaults to cols.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1048576
	OutFeatures *int64 `json:"outFeatures,omitempty"`
}

// Groups describes how a GroupedQuantize tensor is split along its rows.
//
// +kubebuilder:validation:XValidation:rule="self.splits != 'Explicit' || (has(self.sizes) && size(self.sizes) == self.count)",message="spec.workload.groups.sizes must have exactly groups.count entries when splits is Explicit",fieldPath=".sizes"
// +kubebuilder:validation:XValidation:rule="self.splits == 'Explicit' || !has(self.sizes)",message="spec.workload.groups.sizes is allowed only when splits is Explicit",fieldPath=".sizes"
type Groups struct {
	// count is the number of groups (experts), 1 to 1024.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	Count int32 `json:"count"`

	// splits is Uniform (equal groups), Random (drawn from seed) or Explicit (sizes).
	// +optional
	// +kubebuilder:default=Uniform
	Splits SplitPolicy `json:"splits,omitempty"`

	// seed seeds Random splits.
	// +optional
	Seed int64 `json:"seed,omitempty"`

	// sizes are the row counts of the groups when splits is Explicit; they must add
	// up to the shape's rows, and each must be a multiple of the recipe's alignment
	// (MXFP8 32, NVFP4 and block scaling 128, per-tensor FP8 16): the API server
	// refuses a run that breaks it (a rule of QuantRunSpec, which knows the
	// recipe), and the job fails with RecipeInvalid.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1024
	// +kubebuilder:validation:items:Minimum=0
	Sizes []int64 `json:"sizes,omitempty"`
}

// Workload is what is quantized.
//
// +kubebuilder:validation:XValidation:rule="(self.operation == 'GroupedQuantize') == has(self.groups)",message="spec.workload.groups is required with operation GroupedQuantize and allowed only with it",fieldPath=".groups"
// +kubebuilder:validation:XValidation:rule="self.operation == 'QuantizedLinear' || self.shapes.all(s, !has(s.outFeatures))",message="spec.workload.shapes[].outFeatures is allowed only with operation QuantizedLinear",fieldPath=".shapes"
// +kubebuilder:validation:XValidation:rule="self.operation != 'QuantizedLinear' || !has(self.usage) || self.usage != 'Columnwise'",message="spec.workload.usage Columnwise is not allowed with operation QuantizedLinear: its product reads the rowwise operands",fieldPath=".usage"
type Workload struct {
	// operation is Quantize (default), GroupedQuantize or QuantizedLinear.
	// +optional
	// +kubebuilder:default=Quantize
	Operation Operation `json:"operation,omitempty"`

	// shapes are the tensor shapes to run, 1 to 16 of them.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Shapes []Shape `json:"shapes"`

	// groups splits each shape into groups; required with GroupedQuantize.
	// +optional
	Groups *Groups `json:"groups,omitempty"`

	// inputDType is the element type of the generated input: BF16 (default), FP16 or FP32.
	// +optional
	// +kubebuilder:default=BF16
	InputDType DType `json:"inputDType,omitempty"`

	// tensorRole is Input (default), Weight or Gradient. It picks E4M3 or E5M2 under
	// HYBRID, 2D blocks for weights, and NVFP4's Hadamard transform and stochastic
	// rounding as TransformerEngine does.
	// +optional
	// +kubebuilder:default=Input
	TensorRole TensorRole `json:"tensorRole,omitempty"`

	// usage is which operands each step produces: Both (default; training needs
	// the rowwise operand for the forward GEMM and the columnwise one for the
	// backward), Rowwise (inference) or Columnwise. A step that produces one
	// operand reads the input once and writes only that operand, and its
	// bandwidth counts only those bytes. QuantizedLinear multiplies the rowwise
	// operands, so it takes Rowwise or Both.
	// +optional
	// +kubebuilder:default=Both
	Usage Usage `json:"usage,omitempty"`

	// distribution is Normal (default), Uniform or HeavyTailed.
	// +optional
	// +kubebuilder:default=Normal
	Distribution Distribution `json:"distribution,omitempty"`

	// seed makes the generated input reproducible: the same seed gives the same
	// bytes on every node and in kquantctl.
	// +optional
	Seed int64 `json:"seed,omitempty"`
}

// Execution is how each step runs and how often.
type Execution struct {
	// graphs is Eager, Graph or Both (default): Both measures eager launches and
	// CUDA-graph replay and checks that they produce the same bytes.
	// +optional
	// +kubebuilder:default=Both
	Graphs GraphMode `json:"graphs,omitempty"`

	// iterations is the number of timed steps per shape; when left out the job's
	// level decides (Quick 20, Standard 200, Extended 2000).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	Iterations *int32 `json:"iterations,omitempty"`

	// warmup is the number of untimed steps before timing; when left out the job's
	// level decides (Quick 3, Standard 20, Extended 100).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	Warmup *int32 `json:"warmup,omitempty"`

	// runTimeoutSeconds is how long one run's pod may run, from when its
	// node's kubelet accepted it, before it is deleted and the run fails with
	// reason RunTimedOut, which frees its GPU; when left out the job's level
	// decides (Quick 15 minutes, Standard 30 minutes, Extended 2 hours). At
	// most 366 days.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=31622400
	RunTimeoutSeconds *int64 `json:"runTimeoutSeconds,omitempty"`
}

// Tolerances decide a run's verdict.
type Tolerances struct {
	// minSNRdB is the lowest acceptable signal-to-noise ratio of the dequantized
	// output against the input, in dB, as a decimal string between 0 and 200
	// (for example "25" or "31.5"). A run below it fails.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:XValidation:rule="double(self) <= 200.0",message="spec.tolerances.minSNRdB must be between 0 and 200"
	MinSNRdB string `json:"minSNRdB,omitempty"`

	// requireBitExact fails a run whose GPU output differs from the reference
	// backend's in any byte.
	// +optional
	RequireBitExact bool `json:"requireBitExact,omitempty"`
}
