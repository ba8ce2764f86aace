package quantcronjob

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// maxMissed is how many missed schedule times are counted before the
// controller reports TooManyMissedTimes, as CronJob's.
const maxMissed = 100

// Parse parses a cron schedule in timeZone ("" for the manager's local zone).
func Parse(schedule, timeZone string) (cron.Schedule, error) {
	loc := time.Local
	if timeZone != "" {
		l, err := time.LoadLocation(timeZone)
		if err != nil {
			return nil, fmt.Errorf("spec.timeZone %q: %w", timeZone, err)
		}
		loc = l
	}
	s, err := cron.ParseStandard(schedule)
	if err != nil {
		return nil, fmt.Errorf("spec.schedule %q: %w", schedule, err)
	}
	if spec, ok := s.(*cron.SpecSchedule); ok {
		spec.Location = loc
	}
	return s, nil
}

// Due is the schedule's decision at now.
type Due struct {
	// Time is the most recent schedule time not yet run, nil when none is due.
	Time *time.Time
	// Missed counts the schedule times since the last one run (capped just
	// above maxMissed).
	Missed int
	// TooLate is true when Time is older than the starting deadline.
	TooLate bool
	// Next is the first schedule time after now: when to look again.
	Next time.Time
}

// MostRecent returns what is due at now for a schedule created at created,
// last run at last (nil: never) with an optional starting deadline, following
// batch/v1 CronJob: times older than the deadline are not even counted, and
// of several missed times only the latest one is run.
func MostRecent(s cron.Schedule, created time.Time, last *time.Time, deadline *time.Duration, now time.Time) Due {
	earliest := created
	if last != nil {
		earliest = *last
	}
	if deadline != nil {
		if d := now.Add(-*deadline); d.After(earliest) {
			earliest = d
		}
	}
	due := Due{Next: s.Next(now)}
	for t := s.Next(earliest); !t.After(now); t = s.Next(t) {
		due.Time = &t
		due.Missed++
		if due.Missed > maxMissed {
			// Jump to the most recent time without walking every minute of a
			// long outage: the last time at or before now.
			for n := s.Next(t); !n.After(now); n = s.Next(n) {
				t = n
			}
			due.Time = &t
			break
		}
	}
	if due.Time != nil && deadline != nil && due.Time.Add(*deadline).Before(now) {
		due.TooLate = true
	}
	return due
}

// JobName is the deterministic name of the job for schedule time t.
func JobName(cronJob string, t time.Time) string {
	return fmt.Sprintf("%s-%d", cronJob, t.Unix()/60)
}
