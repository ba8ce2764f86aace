// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package schedule

import (
	"time"

	"github.com/robfig/cron/v3"
)

// Counted returns s stepping through a wrapper that counts its calls to the
// parser's Next in n, so that tests can hold MostRecent to MaxSteps.
func Counted(s Schedule, n *int) Schedule {
	s.spec = countingSchedule{inner: s.spec, n: n}
	return s
}

type countingSchedule struct {
	inner cron.Schedule
	n     *int
}

func (c countingSchedule) Next(t time.Time) time.Time {
	*c.n++
	return c.inner.Next(t)
}

// FromSpec is a Schedule stepping through spec, as Parse would return it for
// a calendar schedule.
func FromSpec(spec cron.Schedule) Schedule { return Schedule{spec: spec} }
