// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package schedule_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/quantcronjob/schedule"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		schedule string
		timeZone string
		wantErr  error // nil: accepted; errAny: refused for another reason
	}{
		{name: "five fields", schedule: "0 * * * *"},
		{name: "descriptor", schedule: "@daily", timeZone: "Europe/Berlin"},
		{name: "every", schedule: "@every 90m"},
		{name: "29 February fires every leap year", schedule: "0 0 29 2 *"},
		{name: "31 February never fires", schedule: "0 0 31 2 *", wantErr: schedule.ErrNeverFires},
		{name: "31 April never fires", schedule: "30 6 31 4 *", timeZone: "America/New_York", wantErr: schedule.ErrNeverFires},
		{name: "CRON_TZ without a schedule", schedule: "CRON_TZ=UTC", wantErr: schedule.ErrZonePrefix},
		{name: "TZ prefix", schedule: "TZ=Asia/Tokyo 0 * * * *", wantErr: schedule.ErrZonePrefix},
		{name: "zone prefix after blanks", schedule: "  CRON_TZ=UTC", wantErr: schedule.ErrZonePrefix},
		{name: "words", schedule: "every day", wantErr: errAny},
		{name: "six fields", schedule: "0 0 * * * *", wantErr: errAny},
		{name: "zero step", schedule: "*/0 * * * *", wantErr: errAny},
		{name: "unknown time zone", schedule: "@daily", timeZone: "Mars/Olympus_Mons", wantErr: errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := schedule.Parse(tt.schedule, tt.timeZone)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("Parse(%q) refused it: %v", tt.schedule, err)
			case tt.wantErr != nil && err == nil:
				t.Fatalf("Parse(%q) accepted it", tt.schedule)
			case tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("Parse(%q) = %v, want %v", tt.schedule, err, tt.wantErr)
			}
		})
	}
}

// errAny stands for "any error" in a table of wanted errors.
var errAny = errors.New("any error")

func TestMostRecent(t *testing.T) {
	hourly := mustParse(t, "0 * * * *")
	every := mustParse(t, "@every 7m")
	created := time.Date(2026, 11, 25, 10, 30, 0, 0, time.UTC)
	at := func(h, m int) time.Time { return time.Date(2026, 11, 25, h, m, 0, 0, time.UTC) }
	ptr := func(t time.Time) *time.Time { return &t }
	dur := func(d time.Duration) *time.Duration { return &d }
	year := 365 * 24 * time.Hour
	tests := []struct {
		name        string
		schedule    schedule.Schedule
		last        *time.Time
		deadline    *time.Duration
		now         time.Time
		wantTime    *time.Time
		wantMissed  int
		wantTooLate bool
		wantNext    time.Time
	}{
		{name: "before the first time", schedule: hourly, now: at(10, 59), wantNext: at(11, 0)},
		{name: "at the first time", schedule: hourly, now: at(11, 0), wantTime: ptr(at(11, 0)), wantMissed: 1, wantNext: at(12, 0)},
		{name: "already run", schedule: hourly, last: ptr(at(11, 0)), now: at(11, 30), wantNext: at(12, 0)},
		{name: "three missed: the latest only", schedule: hourly, last: ptr(at(11, 0)), now: at(14, 10), wantTime: ptr(at(14, 0)), wantMissed: 3, wantNext: at(15, 0)},
		{name: "within the deadline", schedule: hourly, now: at(11, 4), deadline: dur(5 * time.Minute), wantTime: ptr(at(11, 0)), wantMissed: 1, wantNext: at(12, 0)},
		{name: "past the deadline: not counted", schedule: hourly, now: at(11, 6), deadline: dur(5 * time.Minute), wantNext: at(12, 0)},
		{name: "many missed, capped count", schedule: hourly, now: at(10, 30).Add(200 * time.Hour), wantTime: ptr(at(10, 0).Add(200 * time.Hour)), wantMissed: 101, wantNext: at(11, 0).Add(200 * time.Hour)},
		{name: "a century missed: the latest, found by search", schedule: hourly, now: at(10, 30).Add(100 * year), wantTime: ptr(at(10, 0).Add(100 * year)), wantMissed: 101, wantNext: at(11, 0).Add(100 * year)},
		{name: "every: a chain from creation", schedule: every, now: at(10, 50), wantTime: ptr(at(10, 44)), wantMissed: 2, wantNext: at(10, 57)},
		{name: "every: many missed stay on the chain", schedule: every, now: at(10, 30).Add(7*time.Minute*1000 + time.Minute), wantTime: ptr(at(10, 30).Add(7 * time.Minute * 1000)), wantMissed: 101, wantNext: at(10, 30).Add(7*time.Minute*1000 + time.Minute).Add(7 * time.Minute)},
		{name: "a zero schedule is never due", schedule: schedule.Schedule{}, now: at(12, 0)},
		{name: "a parser that panics is never due", schedule: schedule.FromSpec(panicking{}), now: at(12, 0)},
		{name: "a parser that never fires is never due", schedule: schedule.FromSpec(standing{}), now: at(12, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps := 0
			got := schedule.MostRecent(schedule.Counted(tt.schedule, &steps), created, tt.last, tt.deadline, tt.now)
			want := schedule.Due{Time: tt.wantTime, Missed: tt.wantMissed, TooLate: tt.wantTooLate, Next: tt.wantNext}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("MostRecent (-want +got):\n%s", diff)
			}
			if steps > schedule.MaxSteps {
				t.Errorf("MostRecent stepped the schedule %d times, more than MaxSteps (%d)", steps, schedule.MaxSteps)
			}
		})
	}
}

// panicking is a parser's schedule whose Next panics, as robfig/cron's
// parser did on "CRON_TZ=UTC".
type panicking struct{}

func (panicking) Next(time.Time) time.Time { panic("index out of range") }

// standing is a parser's schedule whose Next returns its argument: a walk
// that trusted it would never end.
type standing struct{}

func (standing) Next(t time.Time) time.Time { return t }

func mustParse(t *testing.T, spec string) schedule.Schedule {
	t.Helper()
	s, err := schedule.Parse(spec, "UTC")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// FuzzSchedule parses any schedule in one of a few zones and computes its due
// times from any history: it must never panic, and never step the schedule
// more than MaxSteps times. `go test` runs the seeds (testdata/fuzz and the
// f.Add calls below); `go test -fuzz FuzzSchedule` searches further.
func FuzzSchedule(f *testing.F) {
	for _, s := range []string{"0 0 31 2 *", "CRON_TZ=UTC", "TZ=Mars/Olympus_Mons 0 * * * *", "0 0 29 2 *", "@every 1s", "*/5 1-3 * JAN-MAR MON,FRI", "0 2 * * *"} {
		f.Add(s, uint8(0), int64(0), int64(3600), int64(86400), false)
	}
	zones := []string{"", "UTC", "America/Sao_Paulo", "Europe/Berlin", "Australia/Lord_Howe", "Pacific/Chatham", "Asia/Kathmandu", "America/Santiago"}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Offsets are clamped to ±300 years: what a Kubernetes timestamp can hold
	// around now, and more.
	const span = 300 * 365 * 24 * 3600
	clamp := func(v int64) time.Duration { return time.Duration(v%span) * time.Second }
	f.Fuzz(func(t *testing.T, spec string, zone uint8, created, last, now int64, hasLast bool) {
		s, err := schedule.Parse(spec, zones[int(zone)%len(zones)])
		if err != nil {
			return
		}
		var lastTime *time.Time
		if hasLast {
			lastTime = new(base.Add(clamp(last)))
		}
		deadline := kquantv1alpha1.Seconds(now % (kquantv1alpha1.MaxDurationSeconds + 1))
		steps := 0
		due := schedule.MostRecent(schedule.Counted(s, &steps), base.Add(clamp(created)), lastTime, &deadline, base.Add(clamp(now)))
		if steps > schedule.MaxSteps {
			t.Fatalf("MostRecent stepped %q %d times, more than MaxSteps (%d)", spec, steps, schedule.MaxSteps)
		}
		if due.Time != nil && due.Time.After(base.Add(clamp(now))) {
			t.Fatalf("%q: due time %v is after now %v", spec, due.Time, base.Add(clamp(now)))
		}
	})
}
