// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"cmp"
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
		o := copyOf(s.DelayedScaling)
		o.Margin = orDefault(o.Margin, DefaultMargin)
		o.AmaxHistoryLen = orDefault(o.AmaxHistoryLen, DefaultAmaxHistoryLen)
		o.AmaxComputeAlgo = cmp.Or(o.AmaxComputeAlgo, DefaultAmaxComputeAlgo)
		out.DelayedScaling = &o
	case SchemeFloat8CurrentScaling:
		o := copyOf(s.CurrentScaling)
		o.Power2Scales = orDefault(o.Power2Scales, false)
		o.AmaxEpsilon = cmp.Or(o.AmaxEpsilon, DefaultAmaxEpsilon)
		out.CurrentScaling = &o
	case SchemeFloat8BlockScaling:
		o := copyOf(s.BlockScaling)
		o.Power2Scales = orDefault(o.Power2Scales, true)
		out.BlockScaling = &o
	case SchemeMXFP8BlockScaling:
		o := copyOf(s.MXFP8)
		o.ScaleRounding = cmp.Or(o.ScaleRounding, ScaleRoundingTE)
		o.TwoDimensionalWeights = orDefault(o.TwoDimensionalWeights, false)
		out.MXFP8 = &o
	case SchemeNVFP4BlockScaling:
		o := copyOf(s.NVFP4)
		o.RandomHadamardTransform = orDefault(o.RandomHadamardTransform, true)
		o.StochasticRounding = orDefault(o.StochasticRounding, true)
		o.TwoDimensionalWeights = orDefault(o.TwoDimensionalWeights, true)
		o.FourOverSix = cmp.Or(o.FourOverSix, NVFP4ScopeNone)
		o.FourOverSixErrorMode = cmp.Or(o.FourOverSixErrorMode, FourOverSixMAE)
		o.FourOverSixE4M3Bound256 = cmp.Or(o.FourOverSixE4M3Bound256, NVFP4ScopeAll)
		o.RowScaledActivation = orDefault(o.RowScaledActivation, false)
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
		// Options added after the key was first published appear only when
		// they change behaviour, so that existing recipes keep their keys.
		if o.FourOverSix != NVFP4ScopeNone {
			opt("fourOverSix", o.FourOverSix)
			opt("fourOverSixErrorMode", o.FourOverSixErrorMode)
			opt("fourOverSixE4M3Bound256", o.FourOverSixE4M3Bound256)
		}
		if *o.RowScaledActivation {
			opt("rowScaledActivation", true)
		}
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

// copyOf returns a deep copy of *p, or the zero T when p is nil: an options
// block to fill in without touching the spec it came from.
func copyOf[T any, P interface {
	*T
	DeepCopy() *T
}](p P) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p.DeepCopy()
}

// orDefault returns a pointer to a copy of *p, or to def when p is nil.
func orDefault[T any](p *T, def T) *T {
	if p != nil {
		v := *p
		return &v
	}
	return &def
}
