// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import "fmt"

// Passes reports whether a job or run with this worst verdict passed: Pass
// or Warn.
func (v Verdict) Passes() bool { return v == VerdictPass || v == VerdictWarn }

// Severity orders verdicts from best to worst: Pass, Warn, Skip, Fail (0 to
// 3; an unknown verdict is 0). Skip is worse than Warn because a Warn still
// Passes and a Skip does not: the recipe was not checked at all.
func (v Verdict) Severity() int {
	switch v {
	case VerdictFail:
		return 3
	case VerdictSkip:
		return 2
	case VerdictWarn:
		return 1
	}
	return 0
}

// WorstVerdict is the worst verdict that c counts, by Severity; "" when c
// counts none. It is the reason of a job's Passed condition.
func (c VerdictCounts) WorstVerdict() Verdict {
	var worst Verdict
	for _, vc := range [...]struct {
		v Verdict
		n int32
	}{{VerdictPass, c.Pass}, {VerdictWarn, c.Warn}, {VerdictSkip, c.Skip}, {VerdictFail, c.Fail}} {
		if vc.n > 0 && (worst == "" || vc.v.Severity() > worst.Severity()) {
			worst = vc.v
		}
	}
	return worst
}

// Total is the number of runs c counts.
func (c VerdictCounts) Total() int32 { return c.Pass + c.Fail + c.Warn + c.Skip }

// Explain is the sentence that says why results got their verdict, for a
// person: kquantctl prints it, and both run modes store it in the run's
// status.message (so `kubectl describe` shows it), from the results and the
// tolerances they were judged against alone, so that every reader of a
// stored run can say it again.
func (r *RunResults) Explain(t Tolerances) string {
	snr := "no SNR"
	if r.Accuracy != nil && r.Accuracy.SNRdB != "" {
		snr = r.Accuracy.SNRdB + " dB"
	}
	switch r.Reason {
	case VerdictReasonPass:
		return "every check passed"
	case VerdictReasonRecipeUnsupported:
		if r.Capability != nil && r.Capability.Reason != "" {
			return r.Capability.Reason
		}
		return "the GPU can neither run nor emulate the recipe"
	case VerdictReasonAlignmentViolation:
		for _, s := range r.Shapes {
			if s.Accuracy == nil {
				return fmt.Sprintf("shape %dx%d: a group's row count is not a multiple of the recipe's group alignment", s.Rows, s.Cols)
			}
		}
		return "a group's row count is not a multiple of the recipe's group alignment"
	case VerdictReasonNotBitExact:
		if r.Verdict == VerdictFail {
			return "the backend's bytes differ from the reference backend's and the job requires bit-exact results"
		}
		return "the backend's bytes differ from the reference backend's"
	case VerdictReasonBitExactNotCompared:
		return "the job asks for bit-exact results, but nothing was compared with the reference backend"
	case VerdictReasonReplayMismatch:
		return "a CUDA-graph replay produced other bytes than the eager step"
	case VerdictReasonNotCapturable:
		return "the step could not be captured into a CUDA graph"
	case VerdictReasonSNRBelowTolerance:
		return fmt.Sprintf("worst SNR %s is below the tolerance of %s dB", snr, t.MinSNRdB)
	case VerdictReasonSaturated:
		n := int64(0)
		if r.Accuracy != nil {
			n = r.Accuracy.Saturated
		}
		return fmt.Sprintf("%d elements saturated to the format's largest value", n)
	case "":
		return ""
	}
	return "verdict " + string(r.Verdict) + " (" + r.Reason + ")"
}

// FinishedMessage is the status.message of a run that finished on gpu with
// these results: where it ran, then Explain's sentence.
func (r *RunResults) FinishedMessage(gpu string, t Tolerances) string {
	return "finished on GPU " + gpu + ": " + r.Explain(t)
}
