// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"math"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/measure"
)

// Checks are the facts a verdict is judged from.
type Checks struct {
	// Unsupported is TransformerEngine's wording of why the GPU cannot run
	// the recipe; non-empty means Skip.
	Unsupported string
	// Alignment describes the first alignment violation; empty if none.
	Alignment string
	// SNRdB is the worst SNR over the shapes; NaN when nothing was measured.
	SNRdB float64
	// MinSNRdB is the tolerance; NaN when the job sets none.
	MinSNRdB float64
	// RequireBitExact is the job's tolerance; BitExact is nil when not
	// compared (the reference backend is the reference).
	RequireBitExact bool
	BitExact        *bool
	// Graph is the capture and replay outcome; nil when not attempted.
	Graph *measure.GraphOutcome
	// Saturated counts clamped elements.
	Saturated int64
}

// Judge decides a verdict and its reason; RunResults.Explain says it to a
// person. Fails come first in a fixed order (alignment, bytes, replay,
// SNR), then warnings, so that one run always gets the same reason.
func Judge(c Checks) (v1alpha1.Verdict, string) {
	switch {
	case c.Unsupported != "":
		return v1alpha1.VerdictSkip, v1alpha1.VerdictReasonRecipeUnsupported
	case c.Alignment != "":
		return v1alpha1.VerdictFail, v1alpha1.VerdictReasonAlignmentViolation
	case c.RequireBitExact && c.BitExact != nil && !*c.BitExact:
		return v1alpha1.VerdictFail, v1alpha1.VerdictReasonNotBitExact
	case c.Graph != nil && c.Graph.Capturable && !c.Graph.ReplayMatchesEager:
		return v1alpha1.VerdictFail, v1alpha1.VerdictReasonReplayMismatch
	case !math.IsNaN(c.MinSNRdB) && !(c.SNRdB >= c.MinSNRdB):
		// !(>=) so that a NaN SNR fails too: no measurement cannot pass a tolerance.
		return v1alpha1.VerdictFail, v1alpha1.VerdictReasonSNRBelowTolerance
	case c.BitExact != nil && !*c.BitExact:
		return v1alpha1.VerdictWarn, v1alpha1.VerdictReasonNotBitExact
	case c.Graph != nil && !c.Graph.Capturable:
		return v1alpha1.VerdictWarn, v1alpha1.VerdictReasonNotCapturable
	case c.Saturated > 0:
		return v1alpha1.VerdictWarn, v1alpha1.VerdictReasonSaturated
	}
	return v1alpha1.VerdictPass, v1alpha1.VerdictReasonPass
}
