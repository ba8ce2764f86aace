// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"fmt"
	"math"
	"regexp"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kquant/kquant/api/v1alpha1"
)

// validateEnum checks an optional enum field: empty means its default.
func validateEnum[T ~string](p *field.Path, v T, allowed ...T) field.ErrorList {
	if v == "" {
		return nil
	}
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	vals := make([]string, len(allowed))
	for i, a := range allowed {
		vals[i] = string(a)
	}
	return field.ErrorList{field.NotSupported(p, string(v), vals)}
}

func validateRange(p *field.Path, v, lo, hi int64) field.ErrorList {
	if v < lo || v > hi {
		return field.ErrorList{field.Invalid(p, v, fmt.Sprintf("must be between %d and %d", lo, hi))}
	}
	return nil
}

var (
	decimalRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
	epsilonRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)
)

// ValidateQuantRecipeSpec checks a recipe spec as the CRD does, and what
// its schema cannot say: an amaxEpsilon that is finite in float32 (the CRD's
// pattern admits "1e999"). The recipe controller, the job controller, the
// engine and kquantctl all use it, so that a recipe is valid or invalid
// everywhere alike.
func ValidateQuantRecipeSpec(r *v1alpha1.QuantRecipeSpec, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r.Scheme == "" {
		errs = append(errs, field.Required(spec.Child("scheme"), ""))
	} else {
		errs = append(errs, validateEnum(spec.Child("scheme"), r.Scheme, v1alpha1.Schemes...)...)
	}
	fp := spec.Child("format")
	switch r.Format {
	case "":
	case v1alpha1.FormatE5M2:
		errs = append(errs, field.Invalid(fp, r.Format, "E5M2 is not supported (TransformerEngine refuses pure E5M2 for every FP8 recipe); use E4M3 or HYBRID"))
	case v1alpha1.FormatE4M3, v1alpha1.FormatHybrid, v1alpha1.FormatE2M1:
		if (r.Scheme == v1alpha1.SchemeNVFP4BlockScaling) != (r.Format == v1alpha1.FormatE2M1) {
			errs = append(errs, field.Invalid(fp, r.Format, "NVFP4BlockScaling takes only format E2M1, and E2M1 is valid only with NVFP4BlockScaling"))
		}
	default:
		errs = append(errs, field.NotSupported(fp, string(r.Format), []string{"E4M3", "HYBRID", "E2M1"}))
	}
	only := func(name string, present bool, scheme v1alpha1.Scheme) {
		if present && r.Scheme != scheme {
			errs = append(errs, field.Forbidden(spec.Child(name), fmt.Sprintf("allowed only with scheme %s", scheme)))
		}
	}
	only("delayedScaling", r.DelayedScaling != nil, v1alpha1.SchemeDelayedScaling)
	only("currentScaling", r.CurrentScaling != nil, v1alpha1.SchemeFloat8CurrentScaling)
	only("blockScaling", r.BlockScaling != nil, v1alpha1.SchemeFloat8BlockScaling)
	only("mxfp8", r.MXFP8 != nil, v1alpha1.SchemeMXFP8BlockScaling)
	only("nvfp4", r.NVFP4 != nil, v1alpha1.SchemeNVFP4BlockScaling)
	if o := r.DelayedScaling; o != nil {
		p := spec.Child("delayedScaling")
		if o.Margin != nil {
			errs = append(errs, validateRange(p.Child("margin"), int64(*o.Margin), 0, 32)...)
		}
		if o.AmaxHistoryLen != nil {
			errs = append(errs, validateRange(p.Child("amaxHistoryLen"), int64(*o.AmaxHistoryLen), 1, 65536)...)
		}
		errs = append(errs, validateEnum(p.Child("amaxComputeAlgo"), o.AmaxComputeAlgo, v1alpha1.AmaxComputeMax, v1alpha1.AmaxComputeMostRecent)...)
	}
	if o := r.CurrentScaling; o != nil && o.AmaxEpsilon != "" {
		p := spec.Child("currentScaling", "amaxEpsilon")
		if len(o.AmaxEpsilon) > 32 || !epsilonRE.MatchString(o.AmaxEpsilon) {
			errs = append(errs, field.Invalid(p, o.AmaxEpsilon, "must be a nonnegative decimal such as \"0\" or \"1e-12\""))
		} else if _, err := AmaxEpsilon(o.AmaxEpsilon); err != nil {
			errs = append(errs, field.Invalid(p, o.AmaxEpsilon, "must be finite in float32"))
		}
	}
	if o := r.MXFP8; o != nil {
		errs = append(errs, validateEnum(spec.Child("mxfp8", "scaleRounding"), o.ScaleRounding, v1alpha1.ScaleRoundingTE, v1alpha1.ScaleRoundingOCP)...)
	}
	if o := r.NVFP4; o != nil {
		errs = append(errs, validateNVFP4(o, spec.Child("nvfp4"))...)
	}
	return errs
}

// validateNVFP4 checks the NVFP4 options as the CRD's enums and CEL rules
// do: TransformerEngine applies the RHT to inputs, and refuses it together
// with 4over6 on inputs or with row-scaled inputs.
func validateNVFP4(o *v1alpha1.NVFP4Options, p *field.Path) field.ErrorList {
	scopes := []v1alpha1.NVFP4TensorScope{v1alpha1.NVFP4ScopeNone, v1alpha1.NVFP4ScopeWeights, v1alpha1.NVFP4ScopeActivations, v1alpha1.NVFP4ScopeAll}
	errs := validateEnum(p.Child("fourOverSix"), o.FourOverSix, scopes...)
	errs = append(errs, validateEnum(p.Child("fourOverSixE4M3Bound256"), o.FourOverSixE4M3Bound256, scopes...)...)
	errs = append(errs, validateEnum(p.Child("fourOverSixErrorMode"), o.FourOverSixErrorMode, v1alpha1.FourOverSixMAE, v1alpha1.FourOverSixMSE)...)
	rht := o.RandomHadamardTransform == nil || *o.RandomHadamardTransform
	if rht && (o.FourOverSix == v1alpha1.NVFP4ScopeActivations || o.FourOverSix == v1alpha1.NVFP4ScopeAll) {
		errs = append(errs, field.Invalid(p.Child("fourOverSix"), o.FourOverSix,
			"NVFP4 4over6 quantization does not support RHT (TransformerEngine: pre-training paths that combine 4over6 with RHT are not yet implemented); set randomHadamardTransform to false or fourOverSix to weights"))
	}
	if rht && o.RowScaledActivation != nil && *o.RowScaledActivation {
		errs = append(errs, field.Invalid(p.Child("rowScaledActivation"), true,
			"row-scaled NVFP4 quantization does not support RHT (TransformerEngine); set randomHadamardTransform to false"))
	}
	return errs
}

// ValidateRecipeWorkload checks what a recipe and a workload cannot do
// together, as TransformerEngine refuses it: a row-scaled NVFP4 input has
// only a rowwise operand, so a workload that quantizes inputs (tensorRole
// Input, or QuantizedLinear) must use usage Rowwise; and a 4over6 weight in
// 16x16 tiles has no columnwise operand without its rowwise one.
func ValidateRecipeWorkload(r *v1alpha1.QuantRecipeSpec, w *v1alpha1.Workload, p *field.Path) field.ErrorList {
	e := r.Effective()
	if e.NVFP4 == nil {
		return nil
	}
	usage := w.Usage
	if usage == "" {
		usage = v1alpha1.UsageBoth
	}
	inputs := w.Operation == v1alpha1.OperationQuantizedLinear || w.TensorRole == "" || w.TensorRole == v1alpha1.TensorRoleInput
	if *e.NVFP4.RowScaledActivation && inputs && usage != v1alpha1.UsageRowwise {
		return field.ErrorList{field.Invalid(p.Child("usage"), usage,
			"row-scaled NVFP4 quantization does not support columnwise usage (TransformerEngine): the recipe sets nvfp4.rowScaledActivation, so inputs take usage Rowwise")}
	}
	weights4over6 := e.NVFP4.FourOverSix == v1alpha1.NVFP4ScopeWeights || e.NVFP4.FourOverSix == v1alpha1.NVFP4ScopeAll
	if weights4over6 && *e.NVFP4.TwoDimensionalWeights && w.TensorRole == v1alpha1.TensorRoleWeight && usage == v1alpha1.UsageColumnwise {
		return field.ErrorList{field.Invalid(p.Child("usage"), usage,
			"NVFP4 4over6 2D quantization requires rowwise output (TransformerEngine): 4over6 weights in 16x16 tiles take usage Both or Rowwise")}
	}
	return nil
}

// maxDim is the CRD's bound on rows, cols and outFeatures.
const maxDim = 1 << 20

// ValidateWorkload checks a workload as the CRD does, and that explicit
// split sizes add up to every shape's rows.
func ValidateWorkload(w *v1alpha1.Workload, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateEnum(p.Child("operation"), w.Operation, "",
		v1alpha1.OperationQuantize, v1alpha1.OperationGroupedQuantize, v1alpha1.OperationQuantizedLinear)...)
	errs = append(errs, validateEnum(p.Child("inputDType"), w.InputDType, v1alpha1.DTypeBF16, v1alpha1.DTypeFP16, v1alpha1.DTypeFP32)...)
	errs = append(errs, validateEnum(p.Child("tensorRole"), w.TensorRole, v1alpha1.TensorRoleInput, v1alpha1.TensorRoleWeight, v1alpha1.TensorRoleGradient)...)
	errs = append(errs, validateEnum(p.Child("usage"), w.Usage, v1alpha1.UsageRowwise, v1alpha1.UsageColumnwise, v1alpha1.UsageBoth)...)
	if w.Operation == v1alpha1.OperationQuantizedLinear && w.Usage == v1alpha1.UsageColumnwise {
		errs = append(errs, field.Invalid(p.Child("usage"), w.Usage, "Columnwise is not allowed with operation QuantizedLinear: its product reads the rowwise operands"))
	}
	errs = append(errs, validateEnum(p.Child("distribution"), w.Distribution, v1alpha1.DistributionNormal, v1alpha1.DistributionUniform, v1alpha1.DistributionHeavyTailed)...)
	sp := p.Child("shapes")
	switch n := len(w.Shapes); {
	case n == 0:
		errs = append(errs, field.Required(sp, "at least one shape"))
	case n > 16:
		errs = append(errs, field.TooMany(sp, n, 16))
	}
	for i, s := range w.Shapes {
		ip := sp.Index(i)
		errs = append(errs, validateRange(ip.Child("rows"), s.Rows, 1, maxDim)...)
		errs = append(errs, validateRange(ip.Child("cols"), s.Cols, 1, maxDim)...)
		if s.OutFeatures != nil {
			if w.Operation != v1alpha1.OperationQuantizedLinear {
				errs = append(errs, field.Forbidden(ip.Child("outFeatures"), "allowed only with operation QuantizedLinear"))
			} else {
				errs = append(errs, validateRange(ip.Child("outFeatures"), *s.OutFeatures, 1, maxDim)...)
			}
		}
	}
	gp := p.Child("groups")
	grouped := w.Operation == v1alpha1.OperationGroupedQuantize
	switch g := w.Groups; {
	case grouped && g == nil:
		errs = append(errs, field.Required(gp, "required with operation GroupedQuantize"))
	case !grouped && g != nil:
		errs = append(errs, field.Forbidden(gp, "allowed only with operation GroupedQuantize"))
	case g != nil:
		errs = append(errs, validateGroups(g, w.Shapes, gp, sp)...)
	}
	return errs
}

func validateGroups(g *v1alpha1.Groups, shapes []v1alpha1.Shape, gp, sp *field.Path) field.ErrorList {
	errs := validateRange(gp.Child("count"), int64(g.Count), 1, 1024)
	errs = append(errs, validateEnum(gp.Child("splits"), g.Splits, v1alpha1.SplitUniform, v1alpha1.SplitRandom, v1alpha1.SplitExplicit)...)
	zp := gp.Child("sizes")
	if g.Splits != v1alpha1.SplitExplicit {
		if g.Sizes != nil {
			errs = append(errs, field.Forbidden(zp, "allowed only when splits is Explicit"))
		}
		return errs
	}
	if len(g.Sizes) != int(g.Count) {
		return append(errs, field.Invalid(zp, len(g.Sizes), fmt.Sprintf("must have exactly groups.count (%d) entries when splits is Explicit", g.Count)))
	}
	var sum int64
	for i, n := range g.Sizes {
		if n < 0 {
			errs = append(errs, field.Invalid(zp.Index(i), n, "must be 0 or more"))
		}
		sum += n
	}
	for i, s := range shapes {
		if sum != s.Rows {
			errs = append(errs, field.Invalid(zp, sum, fmt.Sprintf("sizes add up to %d rows, but %s is %d", sum, sp.Index(i).Child("rows"), s.Rows)))
		}
	}
	return errs
}

// ValidateExecution checks an execution as the CRD does.
func ValidateExecution(e *v1alpha1.Execution, p *field.Path) field.ErrorList {
	errs := validateEnum(p.Child("graphs"), e.Graphs, v1alpha1.GraphModeEager, v1alpha1.GraphModeGraph, v1alpha1.GraphModeBoth)
	if e.Iterations != nil {
		errs = append(errs, validateRange(p.Child("iterations"), int64(*e.Iterations), 1, 100000)...)
	}
	if e.Warmup != nil {
		errs = append(errs, validateRange(p.Child("warmup"), int64(*e.Warmup), 0, 10000)...)
	}
	return errs
}

// ValidateTolerances checks tolerances as the CRD does.
func ValidateTolerances(t *v1alpha1.Tolerances, p *field.Path) field.ErrorList {
	if t.MinSNRdB == "" {
		return nil
	}
	mp := p.Child("minSNRdB")
	if len(t.MinSNRdB) > 16 || !decimalRE.MatchString(t.MinSNRdB) {
		return field.ErrorList{field.Invalid(mp, t.MinSNRdB, "must be a decimal number of dB such as \"25\" or \"31.5\"")}
	}
	if v, _ := strconv.ParseFloat(t.MinSNRdB, 64); v > 200 {
		return field.ErrorList{field.Invalid(mp, t.MinSNRdB, "must be between 0 and 200")}
	}
	return nil
}

// AmaxEpsilon reads the API's decimal amaxEpsilon as float32 (rounded to
// nearest, as the scale arithmetic is float32).
func AmaxEpsilon(s string) (float32, error) {
	v, err := strconv.ParseFloat(s, 32)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("currentScaling.amaxEpsilon %q is not a finite nonnegative decimal", s)
	}
	return float32(v), nil
}

// ValidateMode checks a job's mode as the CRD does (empty: the default).
func ValidateMode(m v1alpha1.JobMode, p *field.Path) field.ErrorList {
	return validateEnum(p, m, v1alpha1.JobModeBenchmark, v1alpha1.JobModeValidation)
}
