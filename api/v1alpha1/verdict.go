// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

// Passes reports whether a job or run with this worst verdict passed: Pass
// or Warn.
func (v Verdict) Passes() bool { return v == VerdictPass || v == VerdictWarn }

// WorstVerdict is the worst verdict that c counts (Fail, Skip, Warn, Pass, in
// that order); "" when c counts none. It is the reason of a job's Passed
// condition.
func (c VerdictCounts) WorstVerdict() Verdict {
	switch {
	case c.Fail > 0:
		return VerdictFail
	case c.Skip > 0:
		return VerdictSkip
	case c.Warn > 0:
		return VerdictWarn
	case c.Pass > 0:
		return VerdictPass
	}
	return ""
}

// Total is the number of runs c counts.
func (c VerdictCounts) Total() int32 { return c.Pass + c.Fail + c.Warn + c.Skip }
