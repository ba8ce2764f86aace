// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import "time"

// MaxDurationSeconds is the largest value the API admits in any field that
// counts seconds (activeDeadlineSeconds, ttlSecondsAfterFinished,
// startingDeadlineSeconds, execution.runTimeoutSeconds): 366 days. A
// time.Duration holds about 292 years, so a bound of one year keeps every
// sum and difference of such durations and timestamps that the controllers
// compute far inside its range, where 10,000,000,000 seconds overflowed it
// and put a deadline in 1758. No deadline, TTL or time limit of a benchmark
// means anything beyond a year. The CRD markers spell the number (markers
// cannot name a constant); a test holds every seconds field of every CRD to
// it.
const MaxDurationSeconds = 366 * 24 * 60 * 60

// Seconds is the duration of a seconds field, clamped to
// [0, MaxDurationSeconds]: the controllers convert through it, so that an
// object stored before the admission bound existed cannot overflow either.
func Seconds[T int32 | int64](s T) time.Duration {
	return time.Duration(min(max(int64(s), 0), MaxDurationSeconds)) * time.Second
}
