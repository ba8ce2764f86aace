// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// MaxMissed is how many missed schedule times are counted one by one before
// the rest are skipped over; the controller then reports TooManyMissedTimes,
// as CronJob's.
const MaxMissed = 100

// MaxSteps bounds the calls to the parser's Next of one MostRecent: the
// missed times counted one by one, a binary search over the seconds of the
// rest (64 halvings cover any int64 span), and the next time.
const MaxSteps = MaxMissed + 1 + 64 + 2

// ErrNeverFires is returned by Parse for a schedule with no time at all,
// such as the 31st of February.
var ErrNeverFires = errors.New("has no time at which it fires")

// ErrZonePrefix is returned by Parse for a schedule that names its time zone
// with TZ= or CRON_TZ=, which batch/v1 CronJob refuses as well.
var ErrZonePrefix = errors.New("must not name a time zone (TZ= or CRON_TZ=); use spec.timeZone")

// Schedule is a parsed schedule whose due times are computed with bounded
// work.
type Schedule struct {
	spec cron.Schedule
	// every is the delay of an "@every" schedule, whose times are a chain
	// from where it starts rather than a calendar; zero for a calendar
	// schedule.
	every time.Duration
}

// Parse parses a cron schedule in timeZone ("" for the manager's local
// zone), and refuses one that names a zone itself or never fires. It never
// panics.
func Parse(schedule, timeZone string) (_ Schedule, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("spec.schedule %q: the cron parser failed: %v", schedule, p)
		}
	}()
	if hasZonePrefix(schedule) {
		return Schedule{}, fmt.Errorf("spec.schedule %q: %w", schedule, ErrZonePrefix)
	}
	loc := time.Local
	if timeZone != "" {
		l, err := time.LoadLocation(timeZone)
		if err != nil {
			return Schedule{}, fmt.Errorf("spec.timeZone %q: %w", timeZone, err)
		}
		loc = l
	}
	parsed, err := cron.ParseStandard(schedule)
	if err != nil {
		return Schedule{}, fmt.Errorf("spec.schedule %q: %w", schedule, err)
	}
	s := Schedule{spec: parsed}
	switch spec := parsed.(type) {
	case *cron.SpecSchedule:
		spec.Location = loc
		// The parser's Next searches five years ahead, and from the start
		// of a leap year that covers every month and day a standard
		// schedule can name (29 February included): a schedule with no
		// time in those five years has none at all.
		if spec.Next(time.Date(2000, time.January, 1, 0, 0, 0, 0, loc)).IsZero() {
			return Schedule{}, fmt.Errorf("spec.schedule %q: %w", schedule, ErrNeverFires)
		}
	case cron.ConstantDelaySchedule:
		s.every = spec.Delay
	}
	return s, nil
}

// hasZonePrefix reports whether schedule starts with a zone prefix, as the
// parser would read it.
func hasZonePrefix(schedule string) bool {
	s := strings.TrimSpace(schedule)
	return strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ=")
}

// next is the first schedule time after t; the zero time means never (none
// within the parser's five-year search, or a parser failure).
func (s Schedule) next(t time.Time) (n time.Time) {
	defer func() {
		if recover() != nil {
			n = time.Time{}
		}
	}()
	if s.spec == nil {
		return time.Time{}
	}
	n = s.spec.Next(t)
	if !n.After(t) {
		// A step that does not move forward would never end a walk.
		return time.Time{}
	}
	return n
}

// Due is the schedule's decision at now.
type Due struct {
	// Time is the most recent schedule time not yet run, nil when none is due.
	Time *time.Time
	// Missed counts the schedule times since the last one run (capped just
	// above MaxMissed).
	Missed int
	// TooLate is true when Time is older than the starting deadline.
	TooLate bool
	// Next is the first schedule time after now: when to look again. Zero
	// when the schedule has no time within five years of now.
	Next time.Time
}

// MostRecent returns what is due at now for a schedule created at created,
// last run at last (nil: never) with an optional starting deadline, following
// batch/v1 CronJob: times older than the deadline are not even counted, and
// of several missed times only the latest one is run. It steps the schedule
// at most MaxSteps times.
func MostRecent(s Schedule, created time.Time, last *time.Time, deadline *time.Duration, now time.Time) Due {
	earliest := created
	if last != nil {
		earliest = *last
	}
	if deadline != nil {
		if d := now.Add(-*deadline); d.After(earliest) {
			earliest = d
		}
	}
	due := Due{Next: s.next(now)}
	for t := s.next(earliest); !t.IsZero() && !t.After(now); t = s.next(t) {
		due.Time = &t
		due.Missed++
		if due.Missed > MaxMissed {
			latest := s.latest(t, now)
			due.Time = &latest
			break
		}
	}
	if due.Time != nil && deadline != nil && due.Time.Add(*deadline).Before(now) {
		due.TooLate = true
	}
	return due
}

// latest is the last schedule time at or before now, given t, a schedule
// time at or before now, without walking every time in between.
func (s Schedule) latest(t, now time.Time) time.Time {
	if s.every > 0 {
		// A chain from t: t, t+every, t+2·every, ...
		return t.Add((now.Sub(t) / s.every) * s.every)
	}
	// A calendar schedule's times do not depend on where a search starts,
	// and Next is monotonic: binary-search the last second lo at which the
	// next time is still at or before now. That next time is the latest.
	fires := func(sec int64) bool {
		n := s.next(time.Unix(sec, 0))
		return !n.IsZero() && !n.After(now)
	}
	lo, hi := t.Unix(), now.Unix()
	if !fires(lo) {
		return t
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if fires(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return s.next(time.Unix(lo, 0))
}
