// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantcronjob_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/wait"
)

// TestUnusableScheduleIdlesWithAConditionAndAnEvent: a schedule that the CRD
// admits and the controller cannot use creates no job, sets ScheduleValid
// False with reason InvalidSchedule and records a Warning Event; fixing it
// brings the schedule back.
func TestUnusableScheduleIdlesWithAConditionAndAnEvent(t *testing.T) {
	tests := []struct {
		name        string
		schedule    string
		timeZone    *string
		wantMessage string
	}{
		{name: "never fires", schedule: "0 0 30,31 2 *", wantMessage: "has no time at which it fires"},
		{name: "unknown time zone", schedule: "@hourly", timeZone: ptr.To("Mars/Olympus_Mons"), wantMessage: "spec.timeZone"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fmt.Sprintf("cron-invalid-%d", i), kquantv1alpha1.QuantCronJobSpec{
				Schedule: tt.schedule, TimeZone: tt.timeZone, ConcurrencyPolicy: kquantv1alpha1.ConcurrencyAllow,
			})
			if got := f.at(400 * 24 * time.Hour); got != 0 {
				t.Errorf("requeue after %s, want none: only a spec change can fix a schedule", got)
			}
			f.wantJobs("with an unusable schedule")
			cond := meta.FindStatusCondition(f.get().Status.Conditions, kquantv1alpha1.CronJobConditionScheduleValid)
			if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != kquantv1alpha1.ReasonInvalidSchedule || !strings.Contains(cond.Message, tt.wantMessage) {
				t.Fatalf("ScheduleValid = %+v, want False, reason InvalidSchedule, a message with %q", cond, tt.wantMessage)
			}
			waitEvent(t, f, kquantv1alpha1.ReasonInvalidSchedule, tt.wantMessage)

			cj := f.get()
			cj.Spec.Schedule, cj.Spec.TimeZone = "@hourly", ptr.To("UTC")
			if err := c.Update(t.Context(), cj); err != nil {
				t.Fatal(err)
			}
			f.at(400*24*time.Hour + time.Minute)
			cond = meta.FindStatusCondition(f.get().Status.Conditions, kquantv1alpha1.CronJobConditionScheduleValid)
			if cond == nil || cond.Status != metav1.ConditionTrue {
				t.Fatalf("ScheduleValid after the fix = %+v, want True", cond)
			}
			if len(f.jobs(c)) != 1 {
				t.Fatalf("jobs after the fix %v, want the latest missed hour's", f.jobs(c))
			}
		})
	}
}

// TestActiveJobsAreBounded: under concurrencyPolicy Allow, a job due while
// MaxActiveJobs jobs are active is skipped, with ActiveLimitReached and an
// Event naming the limit, and created once one of them finished.
func TestActiveJobsAreBounded(t *testing.T) {
	f := newFixture(t, "cron-active", kquantv1alpha1.QuantCronJobSpec{
		Schedule: "@hourly", ConcurrencyPolicy: kquantv1alpha1.ConcurrencyAllow,
	})
	cj := f.get()
	var active []string
	for i := range kquantv1alpha1.MaxActiveJobs {
		job := &kquantv1alpha1.QuantJob{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("earlier-%03d", i), Namespace: f.key.Namespace},
			Spec:       cj.Spec.JobTemplate.Spec,
		}
		if err := controllerutil.SetControllerReference(cj, job, c.Scheme()); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(t.Context(), job); err != nil {
			t.Fatal(err)
		}
		active = append(active, job.Name)
	}
	first := cj.CreationTimestamp.Truncate(time.Hour).Add(time.Hour).Sub(cj.CreationTimestamp.Time)

	f.at(first)
	f.wantJobs("at the limit", active...)
	status := f.get().Status
	cond := meta.FindStatusCondition(status.Conditions, kquantv1alpha1.CronJobConditionActiveLimitReached)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != kquantv1alpha1.ReasonTooManyActiveJobs || !strings.Contains(cond.Message, "MaxActiveJobs 100") {
		t.Fatalf("ActiveLimitReached = %+v, want True, reason TooManyActiveJobs, naming MaxActiveJobs 100", cond)
	}
	if len(status.Active) != kquantv1alpha1.MaxActiveJobs {
		t.Errorf("status.active holds %d names, want %d", len(status.Active), kquantv1alpha1.MaxActiveJobs)
	}
	waitEvent(t, f, kquantv1alpha1.ReasonTooManyActiveJobs, "MaxActiveJobs 100")

	f.finishJob(active[0], kquantv1alpha1.JobPhaseSucceeded)
	f.at(first + time.Minute)
	f.wantJobs("below the limit", append(active, f.name(first))...)
	cond = meta.FindStatusCondition(f.get().Status.Conditions, kquantv1alpha1.CronJobConditionActiveLimitReached)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != kquantv1alpha1.ReasonWithinLimit {
		t.Fatalf("ActiveLimitReached after a job finished = %+v, want False, reason WithinLimit", cond)
	}
}

// waitEvent waits for a Warning Event regarding f's cronjob with reason and
// a note containing text.
func waitEvent(t *testing.T, f *fixture, reason, text string) {
	t.Helper()
	wait.For(t, 20*time.Second, "a "+reason+" event", func() error {
		events := &eventsv1.EventList{}
		if err := c.List(t.Context(), events, client.InNamespace(f.key.Namespace)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Regarding.Name == f.key.Name && e.Reason == reason && e.Type == "Warning" && strings.Contains(e.Note, text) {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(events.Items))
	})
}
