package v1alpha1

import (
	"fmt"
	"strings"
)

// TransformerEngine's defaults, the single source for every component that needs
// a recipe's effective value (the controller's key, the agent, kquantctl).
const (
	DefaultMargin          int32 = 0
	DefaultAmaxHistoryLen  int32 = 1024
	DefaultAmaxComputeAlgo       = AmaxComputeMax
	DefaultAmaxEpsilon           = "0"
)

// DefaultFormat is TransformerEngine's default element format of a scheme.
func DefaultFormat(s Scheme) Format {
	switch s {
	case SchemeDelayedScaling, SchemeFloat8CurrentScaling:
		return FormatHybrid
	case SchemeNVFP4BlockScaling:
		return FormatE2M1
	default:
		return FormatE4M3
	}
}

// Effective returns the spec with every option of its scheme filled in with
// TransformerEngine's default where it was left out, and the options blocks of
// other schemes dropped. It never modifies s.
func (s *QuantRecipeSpec) Effective() QuantRecipeSpec {
	out := QuantRecipeSpec{Scheme: s.Scheme, Format: s.Format}
	if out.Format == "" {
		out.Format = DefaultFormat(s.Scheme)
	}
	switch s.Scheme {
	case SchemeDelayedScaling:
		o := DelayedScalingOptions{}
		if s.DelayedScaling != nil {
			o = *s.DelayedScaling.DeepCopy()
		}
		o.Margin = orDefault(o.Margin, DefaultMargin)
		o.AmaxHistoryLen = orDefault(o.AmaxHistoryLen, DefaultAmaxHistoryLen)
		if o.AmaxComputeAlgo == "" {
			o.AmaxComputeAlgo = DefaultAmaxComputeAlgo
		}
		out.DelayedScaling = &o
	case SchemeFloat8CurrentScaling:
		o := CurrentScalingOptions{}
		if s.CurrentScaling != nil {
			o = *s.CurrentScaling.DeepCopy()
		}
		o.Power2Scales = orDefault(o.Power2Scales, false)
		if o.AmaxEpsilon == "" {
			o.AmaxEpsilon = DefaultAmaxEpsilon
		}
		out.CurrentScaling = &o
	case SchemeFloat8BlockScaling:
		o := BlockScalingOptions{}
		if s.BlockScaling != nil {
			o = *s.BlockScaling.DeepCopy()
		}
		o.Power2Scales = orDefault(o.Power2Scales, true)
		out.BlockScaling = &o
	case SchemeMXFP8BlockScaling:
		o := MXFP8Options{}
		if s.MXFP8 != nil {
			o = *s.MXFP8.DeepCopy()
		}
		if o.ScaleRounding == "" {
			o.ScaleRounding = ScaleRoundingTE
		}
		o.TwoDimensionalWeights = orDefault(o.TwoDimensionalWeights, false)
		out.MXFP8 = &o
	case SchemeNVFP4BlockScaling:
		o := NVFP4Options{}
		if s.NVFP4 != nil {
			o = *s.NVFP4.DeepCopy()
		}
		o.RandomHadamardTransform = orDefault(o.RandomHadamardTransform, true)
		o.StochasticRounding = orDefault(o.StochasticRounding, true)
		o.TwoDimensionalWeights = orDefault(o.TwoDimensionalWeights, true)
		out.NVFP4 = &o
	}
	return out
}

// Key is the canonical text of the effective recipe: the scheme, the format and
// every option of the scheme in a fixed order, defaults included, so that two
// specs that behave the same have the same key whatever the field order of their
// manifests and whichever defaults they spelled out. It is the cached "repr" that
// TransformerEngine recomputes on every call.
func (s *QuantRecipeSpec) Key() string {
	e := s.Effective()
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s", e.Scheme, e.Format)
	opt := func(name string, value any) { fmt.Fprintf(&b, ";%s=%v", name, value) }
	switch {
	case e.DelayedScaling != nil:
		o := e.DelayedScaling
		opt("margin", *o.Margin)
		opt("amaxHistoryLen", *o.AmaxHistoryLen)
		opt("amaxComputeAlgo", o.AmaxComputeAlgo)
	case e.CurrentScaling != nil:
		o := e.CurrentScaling
		opt("power2Scales", *o.Power2Scales)
		opt("amaxEpsilon", canonicalDecimal(o.AmaxEpsilon))
	case e.BlockScaling != nil:
		opt("power2Scales", *e.BlockScaling.Power2Scales)
	case e.MXFP8 != nil:
		opt("scaleRounding", e.MXFP8.ScaleRounding)
		opt("twoDimensionalWeights", *e.MXFP8.TwoDimensionalWeights)
	case e.NVFP4 != nil:
		o := e.NVFP4
		opt("randomHadamardTransform", *o.RandomHadamardTransform)
		opt("stochasticRounding", *o.StochasticRounding)
		opt("twoDimensionalWeights", *o.TwoDimensionalWeights)
	}
	return b.String()
}

// canonicalDecimal spells equal decimal strings ("0", "0.0", "0e5") the same way.
func canonicalDecimal(s string) string {
	var f float64
	if _, err := fmt.Sscan(s, &f); err != nil {
		return s
	}
	return fmt.Sprintf("%g", f)
}

func orDefault[T any](p *T, def T) *T {
	if p != nil {
		v := *p
		return &v
	}
	return &def
}
