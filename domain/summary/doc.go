// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package summary aggregates a job's succeeded runs into its status summary:
// min / median / max per metric, verdict counts and outliers (runs more than
// three median absolute deviations worse than the median of their GPU product).
// Arithmetic is exact on decimals (math/big.Rat), so the summary's strings are
// as exact as the runs' and the same inputs always give the same text.
package summary
