// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quant

import (
	"errors"
	"fmt"
	"math"

	"github.com/kquant/kquant/internal/quant/element"
	"github.com/kquant/kquant/internal/quant/hadamard"
	"github.com/kquant/kquant/internal/quant/scaling"
)

// Scheme is a recipe family; the names are TransformerEngine's and the API's.
type Scheme string

// The schemes.
const (
	DelayedScaling       Scheme = "DelayedScaling"
	Float8CurrentScaling Scheme = "Float8CurrentScaling"
	Float8BlockScaling   Scheme = "Float8BlockScaling"
	MXFP8BlockScaling    Scheme = "MXFP8BlockScaling"
	NVFP4BlockScaling    Scheme = "NVFP4BlockScaling"
)

// Schemes lists every scheme in a stable order.
func Schemes() []Scheme {
	return []Scheme{DelayedScaling, Float8CurrentScaling, Float8BlockScaling, MXFP8BlockScaling, NVFP4BlockScaling}
}

// GroupAlignment returns the row count every group of a grouped quantize
// must be a multiple of: 32 (MXFP8), 128 (NVFP4, block scaling), 16
// (per-tensor FP8). It returns 0 for an unknown scheme.
func (s Scheme) GroupAlignment() int {
	switch s {
	case MXFP8BlockScaling:
		return 32
	case NVFP4BlockScaling, Float8BlockScaling:
		return 128
	case DelayedScaling, Float8CurrentScaling:
		return 16
	default:
		return 0
	}
}

// Format is a recipe's element format.
type Format string

// The formats. FormatE5M2 exists only to be refused by Validate.
const (
	FormatE4M3   Format = "E4M3"
	FormatHybrid Format = "HYBRID"
	FormatE5M2   Format = "E5M2"
	FormatE2M1   Format = "E2M1"
)

// TensorRole is the role of a tensor in training.
type TensorRole string

// The roles.
const (
	Input    TensorRole = "Input"
	Weight   TensorRole = "Weight"
	Gradient TensorRole = "Gradient"
)

// Validate reports whether the role is one of the three.
func (r TensorRole) Validate() error {
	switch r {
	case Input, Weight, Gradient:
		return nil
	default:
		return fmt.Errorf("unknown tensor role %q (want Input, Weight or Gradient)", string(r))
	}
}

// ScaleRounding picks the MXFP8 E8M0 exponent rounding.
type ScaleRounding string

// The roundings.
const (
	ScaleRoundingTE  ScaleRounding = "TE"
	ScaleRoundingOCP ScaleRounding = "OCP"
)

// AmaxComputeAlgo picks the amax delayed scaling derives its scale from.
type AmaxComputeAlgo string

// The algorithms, spelled as in TE and the API.
const (
	AmaxComputeMax        AmaxComputeAlgo = "max"
	AmaxComputeMostRecent AmaxComputeAlgo = "most_recent"
)

// DelayedOptions tunes DelayedScaling. TE defaults: margin 0, history 1024,
// algorithm max.
type DelayedOptions struct {
	Margin          int
	AmaxHistoryLen  int
	AmaxComputeAlgo AmaxComputeAlgo
}

// CurrentOptions tunes Float8CurrentScaling. TE defaults: no power-of-2
// scales, epsilon 0.
type CurrentOptions struct {
	Power2Scales bool
	AmaxEpsilon  float32
}

// BlockOptions tunes Float8BlockScaling. TE defaults: power-of-2 scales,
// epsilon 0. Power2Scales false is the float32-scales option.
type BlockOptions struct {
	Power2Scales bool
	AmaxEpsilon  float32
}

// MXFP8Options tunes MXFP8BlockScaling. TE defaults: TE rounding, 1D blocks
// for weights.
type MXFP8Options struct {
	ScaleRounding         ScaleRounding
	TwoDimensionalWeights bool
}

// NVFP4Options tunes NVFP4BlockScaling. TE defaults: all three transforms
// on, TE's sign vector, no 4over6 (MAE and the 256 bound when enabled), no
// row scaling.
type NVFP4Options struct {
	RandomHadamardTransform bool
	StochasticRounding      bool
	TwoDimensionalWeights   bool
	// RHTSignMask is the RHT sign vector, bit j set where s_j = -1
	// (hadamard.TESignMask by default).
	RHTSignMask uint16
	// FourOverSix selects the tensors whose blocks choose between the
	// map-to-6 and map-to-4 scale (TE's nvfp4_4over6); gradients never do.
	FourOverSix TensorScope
	// FourOverSixErrorMode is the error measure of that choice.
	FourOverSixErrorMode ErrorMode
	// FourOverSixE4M3Bound256 selects the 4over6 tensors whose tensor
	// scale uses 256 instead of 448 as the E4M3 bound (TE's
	// nvfp4_4over6_e4m3_use_256).
	FourOverSixE4M3Bound256 TensorScope
	// RowScaledActivation gives inputs one tensor scale per row (TE's
	// row_scaled_activation); inputs then have only a rowwise operand.
	RowScaledActivation bool
}

// TensorScope selects tensors by role, as TE's 4over6 options do.
type TensorScope string

// The scopes, spelled as in TE and the API.
const (
	ScopeNone        TensorScope = "none"
	ScopeWeights     TensorScope = "weights"
	ScopeActivations TensorScope = "activations"
	ScopeAll         TensorScope = "all"
)

// Includes reports whether the scope selects a tensor of the role. No
// scope selects gradients: TE keeps standard NVFP4 for them so that their
// RHT and stochastic rounding follow the base recipe.
func (s TensorScope) Includes(role TensorRole) bool {
	switch s {
	case ScopeAll:
		return role == Input || role == Weight
	case ScopeWeights:
		return role == Weight
	case ScopeActivations:
		return role == Input
	default:
		return false
	}
}

func (s TensorScope) valid() bool {
	switch s {
	case ScopeNone, ScopeWeights, ScopeActivations, ScopeAll:
		return true
	}
	return false
}

// ErrorMode is the error measure of NVFP4 4over6.
type ErrorMode string

// The measures, spelled as in TE and the API.
const (
	ErrorMAE ErrorMode = "MAE" // sum of absolute errors over the block
	ErrorMSE ErrorMode = "MSE" // sum of squared errors over the block
)

// TE's refusals of option pairs, word for word where TE has words.
var (
	// ErrFourOverSixRHT: TE's quantizer factory raises "NVFP4 4over6
	// quantization does not support RHT." and its recipe documents why.
	ErrFourOverSixRHT = errors.New("NVFP4 4over6 quantization does not support RHT (TransformerEngine: pre-training paths that combine 4over6 with RHT are not yet implemented); disable randomHadamardTransform or apply fourOverSix to weights only")
	// ErrRowScaledRHT: TE's NVFP4 quantizer checks this before quantizing.
	ErrRowScaledRHT = errors.New("row-scaled NVFP4 quantization does not support RHT (TransformerEngine); disable randomHadamardTransform")
	// ErrRowScaledColumnwise: a row-scaled tensor has only a rowwise operand.
	ErrRowScaledColumnwise = errors.New("row-scaled NVFP4 quantization does not support columnwise usage (TransformerEngine): quantize inputs rowwise only")
	// ErrFourOverSix2DColumnwise: TE's 4over6 kernel makes a 16x16 tile's
	// columnwise operand only together with its rowwise one.
	ErrFourOverSix2DColumnwise = errors.New("NVFP4 4over6 2D quantization requires rowwise output (TransformerEngine): quantize 4over6 weights with usage Both or Rowwise")
)

// Recipe is a quantization recipe. Only the options of its Scheme are read.
// Start from DefaultRecipe, which fills in TE's defaults; the zero value of
// an options struct is not the default.
type Recipe struct {
	Scheme  Scheme
	Format  Format
	Delayed DelayedOptions
	Current CurrentOptions
	Block   BlockOptions
	MXFP8   MXFP8Options
	NVFP4   NVFP4Options
}

// DefaultRecipe returns the scheme with TransformerEngine's defaults.
func DefaultRecipe(s Scheme) Recipe {
	r := Recipe{
		Scheme:  s,
		Delayed: DelayedOptions{Margin: 0, AmaxHistoryLen: 1024, AmaxComputeAlgo: AmaxComputeMax},
		Current: CurrentOptions{},
		Block:   BlockOptions{Power2Scales: true},
		MXFP8:   MXFP8Options{ScaleRounding: ScaleRoundingTE},
		NVFP4: NVFP4Options{
			RandomHadamardTransform: true, StochasticRounding: true, TwoDimensionalWeights: true,
			RHTSignMask: hadamard.TESignMask,
			FourOverSix: ScopeNone, FourOverSixErrorMode: ErrorMAE, FourOverSixE4M3Bound256: ScopeAll,
		},
	}
	switch s {
	case DelayedScaling, Float8CurrentScaling:
		r.Format = FormatHybrid
	case Float8BlockScaling, MXFP8BlockScaling:
		r.Format = FormatE4M3
	case NVFP4BlockScaling:
		r.Format = FormatE2M1
	}
	return r
}

// ErrE5M2 is returned for the pure E5M2 format, which TE refuses.
var ErrE5M2 = errors.New("format E5M2 is not supported (TransformerEngine refuses pure E5M2 for every FP8 recipe); use E4M3 or HYBRID")

// Validate checks the recipe's scheme, format and the options its scheme
// reads.
func (r Recipe) Validate() error {
	switch r.Scheme {
	case DelayedScaling, Float8CurrentScaling, Float8BlockScaling, MXFP8BlockScaling:
		switch r.Format {
		case FormatE4M3, FormatHybrid:
		case FormatE5M2:
			return ErrE5M2
		default:
			return fmt.Errorf("scheme %s takes format E4M3 or HYBRID, not %q", r.Scheme, string(r.Format))
		}
	case NVFP4BlockScaling:
		if r.Format != FormatE2M1 {
			return fmt.Errorf("scheme %s takes only format E2M1, not %q", r.Scheme, string(r.Format))
		}
	default:
		return fmt.Errorf("unknown scheme %q", string(r.Scheme))
	}
	switch r.Scheme {
	case DelayedScaling:
		d := r.Delayed
		if d.Margin < 0 || d.Margin > 32 {
			return fmt.Errorf("delayed scaling margin %d is outside [0, 32]", d.Margin)
		}
		if d.AmaxHistoryLen < 1 {
			return fmt.Errorf("delayed scaling amax history length %d is below 1", d.AmaxHistoryLen)
		}
		if d.AmaxComputeAlgo != AmaxComputeMax && d.AmaxComputeAlgo != AmaxComputeMostRecent {
			return fmt.Errorf("delayed scaling amax algorithm %q is not max or most_recent", string(d.AmaxComputeAlgo))
		}
	case Float8CurrentScaling:
		if err := checkEpsilon(r.Current.AmaxEpsilon); err != nil {
			return fmt.Errorf("current scaling: %w", err)
		}
	case Float8BlockScaling:
		if err := checkEpsilon(r.Block.AmaxEpsilon); err != nil {
			return fmt.Errorf("block scaling: %w", err)
		}
	case MXFP8BlockScaling:
		if r.MXFP8.ScaleRounding != ScaleRoundingTE && r.MXFP8.ScaleRounding != ScaleRoundingOCP {
			return fmt.Errorf("mxfp8 scale rounding %q is not TE or OCP", string(r.MXFP8.ScaleRounding))
		}
	case NVFP4BlockScaling:
		return r.NVFP4.validate()
	}
	return nil
}

// validate checks the NVFP4 options against each other with TE's rules:
// the RHT applies to inputs, so neither 4over6 on inputs nor row-scaled
// inputs may be combined with it.
func (o NVFP4Options) validate() error {
	if !o.FourOverSix.valid() || !o.FourOverSixE4M3Bound256.valid() {
		return fmt.Errorf("nvfp4 4over6 scopes %q, %q are not none, weights, activations or all", string(o.FourOverSix), string(o.FourOverSixE4M3Bound256))
	}
	if o.FourOverSixErrorMode != ErrorMAE && o.FourOverSixErrorMode != ErrorMSE {
		return fmt.Errorf("nvfp4 4over6 error mode %q is not MAE or MSE", string(o.FourOverSixErrorMode))
	}
	if o.RandomHadamardTransform && o.FourOverSix.Includes(Input) {
		return ErrFourOverSixRHT
	}
	if o.RandomHadamardTransform && o.RowScaledActivation {
		return ErrRowScaledRHT
	}
	return nil
}

func checkEpsilon(eps float32) error {
	if eps < 0 || math.IsInf(float64(eps), 0) || eps != eps {
		return fmt.Errorf("amax epsilon %g is not a finite nonnegative number", eps)
	}
	return nil
}

// ScaleKind is how an operand stores its decode scales.
type ScaleKind uint8

// The scale kinds.
const (
	ScaleFloat32 ScaleKind = iota + 1 // scale_inv as float32 (per tensor, block scaling)
	ScaleE8M0                         // E8M0 codes (MXFP8)
	ScaleE4M3                         // E4M3 codes (NVFP4), with a float32 tensor scale
)

// String names the kind as the dumps do: "float32", or the element type
// of the scale codes.
func (k ScaleKind) String() string {
	switch k {
	case ScaleFloat32:
		return "float32"
	case ScaleE8M0:
		return element.E8M0.String()
	case ScaleE4M3:
		return element.E4M3.String()
	default:
		return fmt.Sprintf("ScaleKind(%d)", uint8(k))
	}
}

// Plan is a recipe resolved for one tensor role: everything a backend needs
// to know to quantize, with no role logic left. Backends should take every
// decision from the Plan so that they cannot disagree on the role rules.
type Plan struct {
	Scheme  Scheme
	Element element.Type
	Scales  ScaleKind
	// BlockRows x BlockCols is the scaling granularity of the rowwise
	// operand: 0x0 per tensor, 1x128 or 128x128 (block scaling), 1x32 or
	// 32x32 (MXFP8), 1x16 or 16x16 (NVFP4). The columnwise operand uses
	// the transposed block (BlockCols x BlockRows) of the input.
	BlockRows, BlockCols int
	// Power2Scales and Epsilon apply to per-tensor and block FP8 scales.
	Power2Scales bool
	Epsilon      float32
	// Rounding is the MXFP8 exponent rounding.
	Rounding scaling.Rounding
	// Delayed holds the delayed-scaling parameters.
	Delayed DelayedOptions
	// RHT applies the random Hadamard transform with RHTSignMask to the
	// columnwise operand before quantizing it (NVFP4).
	RHT         bool
	RHTSignMask uint16
	// Stochastic rounds both operands stochastically (NVFP4 gradients).
	Stochastic bool
	// ColumnwiseTransposed is true when the columnwise operand is stored
	// as [cols, rows].
	ColumnwiseTransposed bool
	// FourOverSix, when not empty, makes each NVFP4 block choose between
	// its map-to-6 and map-to-4 scale by this error measure.
	FourOverSix ErrorMode
	// TensorScaleBound is the E4M3 bound of NVFP4's tensor scale
	// S = bound * 6 / amax: 448, or 256 for 4over6 tensors TE bounds so.
	TensorScaleBound float32
	// RowScaled gives NVFP4 one tensor scale per row of the rowwise
	// operand; the plan then has no columnwise operand.
	RowScaled bool
}

// PerTensor reports whether the plan has one scale per tensor.
func (p Plan) PerTensor() bool { return p.BlockRows == 0 }

// Plan resolves the recipe for a tensor role.
func (r Recipe) Plan(role TensorRole) (Plan, error) {
	if err := r.Validate(); err != nil {
		return Plan{}, fmt.Errorf("invalid recipe: %w", err)
	}
	if err := role.Validate(); err != nil {
		return Plan{}, err
	}
	p := Plan{Scheme: r.Scheme, Element: element.E4M3}
	if r.Format == FormatHybrid && role == Gradient {
		p.Element = element.E5M2
	}
	switch r.Scheme {
	case DelayedScaling:
		p.Scales = ScaleFloat32
		p.Delayed = r.Delayed
		p.ColumnwiseTransposed = true
	case Float8CurrentScaling:
		p.Scales = ScaleFloat32
		p.Power2Scales, p.Epsilon = r.Current.Power2Scales, r.Current.AmaxEpsilon
		p.ColumnwiseTransposed = true
	case Float8BlockScaling:
		p.Scales = ScaleFloat32
		p.Power2Scales, p.Epsilon = r.Block.Power2Scales, r.Block.AmaxEpsilon
		p.BlockRows, p.BlockCols = 1, 128
		if role == Weight {
			p.BlockRows = 128
		}
		p.ColumnwiseTransposed = true
	case MXFP8BlockScaling:
		p.Scales = ScaleE8M0
		p.BlockRows, p.BlockCols = 1, 32
		if role == Weight && r.MXFP8.TwoDimensionalWeights {
			p.BlockRows = 32
		}
		if r.MXFP8.ScaleRounding == ScaleRoundingOCP {
			p.Rounding = scaling.RoundingOCP
		}
	case NVFP4BlockScaling:
		p.Element = element.E2M1
		p.Scales = ScaleE4M3
		p.BlockRows, p.BlockCols = 1, 16
		if role == Weight && r.NVFP4.TwoDimensionalWeights {
			p.BlockRows = 16
		}
		p.RHT = r.NVFP4.RandomHadamardTransform && role != Weight
		p.RHTSignMask = r.NVFP4.RHTSignMask
		p.Stochastic = r.NVFP4.StochasticRounding && role == Gradient
		p.ColumnwiseTransposed = true
		p.TensorScaleBound = scaling.NVFP4Bound
		if r.NVFP4.FourOverSix.Includes(role) {
			p.FourOverSix = r.NVFP4.FourOverSixErrorMode
			if r.NVFP4.FourOverSixE4M3Bound256.Includes(role) {
				p.TensorScaleBound = scaling.NVFP4FourOverSixBound
			}
		}
		p.RowScaled = r.NVFP4.RowScaledActivation && role == Input
	}
	return p, nil
}

// CheckUsage reports whether the plan can produce the operands of usage u.
func (p Plan) CheckUsage(u Usage) error {
	if p.RowScaled && u&UsageColumnwise != 0 {
		return ErrRowScaledColumnwise
	}
	if p.FourOverSix != "" && p.BlockRows > 1 && u&UsageRowwise == 0 {
		return ErrFourOverSix2DColumnwise
	}
	return nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
func roundUp(a, b int) int { return ceilDiv(a, b) * b }

// ScaleShape returns TE's padded shape of the scale matrix of an operand of
// a rows x cols input (the contract's table); per-tensor plans give [1, 1].
func (p Plan) ScaleShape(rows, cols int, columnwise bool) (int, int) {
	switch {
	case p.PerTensor():
		return 1, 1
	case p.Scheme == MXFP8BlockScaling && !columnwise:
		return roundUp(rows, 128), roundUp(ceilDiv(cols, 32), 4)
	case p.Scheme == MXFP8BlockScaling:
		return roundUp(ceilDiv(rows, 32), 4), roundUp(cols, 128)
	case p.Scheme == NVFP4BlockScaling && !columnwise:
		return roundUp(rows, 128), roundUp(ceilDiv(cols, 16), 4)
	case p.Scheme == NVFP4BlockScaling:
		return roundUp(cols, 128), roundUp(ceilDiv(rows, 16), 4)
	case p.BlockRows == 1 && !columnwise: // block 1x128
		return ceilDiv(cols, 128), roundUp(rows, 4)
	case p.BlockRows == 1:
		return ceilDiv(rows, 128), roundUp(cols, 4)
	case !columnwise: // block 128x128
		return ceilDiv(rows, 128), roundUp(ceilDiv(cols, 128), 4)
	default:
		return ceilDiv(cols, 128), roundUp(ceilDiv(rows, 128), 4)
	}
}

// ScaleIndex returns the index into an operand's scale matrix (ScaleCols
// columns, as from ScaleShape) of the scale that decodes element (i, j) of
// the operand as stored (transposed operands are indexed in their stored
// orientation). Per-tensor plans always give 0.
func (p Plan) ScaleIndex(i, j, scaleCols int, columnwise bool) int {
	switch {
	case p.PerTensor():
		return 0
	case p.Scheme == Float8BlockScaling && p.BlockRows == 1:
		// [ceil(K/128), roundup(M,4)] rowwise and [ceil(M/128),
		// roundup(K,4)] over the transposed operand: both (j/128, i).
		return (j/128)*scaleCols + i
	case p.Scheme == Float8BlockScaling:
		return (i/128)*scaleCols + j/128
	case p.Scheme == MXFP8BlockScaling && columnwise:
		return (i/32)*scaleCols + j
	case p.Scheme == MXFP8BlockScaling:
		return i*scaleCols + j/32
	default: // NVFP4, both operands stored with blocks along the row
		return i*scaleCols + j/16
	}
}
