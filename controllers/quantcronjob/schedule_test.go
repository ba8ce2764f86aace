package quantcronjob

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

func TestMostRecent(t *testing.T) {
	hourly, err := Parse("0 * * * *", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 11, 25, 10, 30, 0, 0, time.UTC)
	at := func(h, m int) time.Time { return time.Date(2026, 11, 25, h, m, 0, 0, time.UTC) }
	ptr := func(t time.Time) *time.Time { return &t }
	dur := func(d time.Duration) *time.Duration { return &d }
	tests := []struct {
		name        string
		last        *time.Time
		deadline    *time.Duration
		now         time.Time
		wantTime    *time.Time
		wantMissed  int
		wantTooLate bool
		wantNext    time.Time
	}{
		{name: "before the first time", now: at(10, 59), wantNext: at(11, 0)},
		{name: "at the first time", now: at(11, 0), wantTime: ptr(at(11, 0)), wantMissed: 1, wantNext: at(12, 0)},
		{name: "already run", last: ptr(at(11, 0)), now: at(11, 30), wantNext: at(12, 0)},
		{name: "three missed: the latest only", last: ptr(at(11, 0)), now: at(14, 10), wantTime: ptr(at(14, 0)), wantMissed: 3, wantNext: at(15, 0)},
		{name: "within the deadline", now: at(11, 4), deadline: dur(5 * time.Minute), wantTime: ptr(at(11, 0)), wantMissed: 1, wantNext: at(12, 0)},
		{name: "past the deadline: not counted", now: at(11, 6), deadline: dur(5 * time.Minute), wantNext: at(12, 0)},
		{name: "many missed, capped count", now: at(10, 30).Add(200 * time.Hour), wantTime: ptr(at(10, 0).Add(200 * time.Hour)), wantMissed: maxMissed + 1, wantNext: at(11, 0).Add(200 * time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MostRecent(hourly, created, tt.last, tt.deadline, tt.now)
			want := Due{Time: tt.wantTime, Missed: tt.wantMissed, TooLate: tt.wantTooLate, Next: tt.wantNext}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("MostRecent (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := Parse("every day", ""); err == nil {
		t.Error("Parse accepted a bad schedule")
	}
	if _, err := Parse("@daily", "Mars/Olympus_Mons"); err == nil {
		t.Error("Parse accepted a bad time zone")
	}
}

func TestDriverChanges(t *testing.T) {
	profile := func(name, driver, cuda string) kquantv1alpha1.GPUNodeProfile {
		p := kquantv1alpha1.GPUNodeProfile{}
		p.Name, p.Status.DriverVersion, p.Status.CUDADriverVersion = name, driver, cuda
		return p
	}
	seen := []kquantv1alpha1.NodeDriver{{NodeName: "a", DriverVersion: "580", CUDADriverVersion: "13.0"}, {NodeName: "gone", DriverVersion: "570"}}
	changed, record := DriverChanges(seen, []kquantv1alpha1.GPUNodeProfile{
		profile("a", "590", "13.1"), // upgraded
		profile("b", "580", "13.0"), // first seen
		profile("c", "", ""),        // not reported yet
	})
	wantChanged := []kquantv1alpha1.NodeDriver{{NodeName: "a", DriverVersion: "590", CUDADriverVersion: "13.1"}}
	wantRecord := []kquantv1alpha1.NodeDriver{
		{NodeName: "a", DriverVersion: "590", CUDADriverVersion: "13.1"},
		{NodeName: "b", DriverVersion: "580", CUDADriverVersion: "13.0"},
		{NodeName: "gone", DriverVersion: "570"},
	}
	if diff := cmp.Diff(wantChanged, changed); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantRecord, record); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	if DriverJobName("x", wantChanged[0]) == DriverJobName("x", wantRecord[1]) {
		t.Error("two drivers share a job name")
	}
}
