// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantcronjob

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/apply"
	"github.com/kquant/kquant/controllers/internal/conflict"
	"github.com/kquant/kquant/controllers/internal/indexer"
	"github.com/kquant/kquant/controllers/quantcronjob/schedule"
	"github.com/kquant/kquant/internal/logging"
)

// ControllerName is the controller's stable name.
const ControllerName = "quantcronjob"

// Event reasons, as CronJob's.
const (
	ReasonSuccessfulCreate   = "SuccessfulCreate"
	ReasonDriverChanged      = "DriverChanged"
	ReasonMissSchedule       = "MissSchedule"
	ReasonTooManyMissedTimes = "TooManyMissedTimes"
	ReasonJobAlreadyActive   = "JobAlreadyActive"
	ReasonSuccessfulDelete   = "SuccessfulDelete"
)

// farHorizon is when a valid schedule with no time in the parser's five-year
// search from now (29 February around 2100) is looked at again.
const farHorizon = 24 * time.Hour

// Reconciler creates a QuantCronJob's jobs.
type Reconciler struct {
	client   client.Client
	recorder events.EventRecorder
	clock    clock.PassiveClock
}

// New returns a Reconciler telling the time by clk.
func New(c client.Client, recorder events.EventRecorder, clk clock.PassiveClock) *Reconciler {
	return &Reconciler{client: c, recorder: recorder, clock: clk}
}

// +kubebuilder:rbac:groups=kquant.dev,resources=quantcronjobs,verbs=get;list;watch
// +kubebuilder:rbac:groups=kquant.dev,resources=quantcronjobs/status,verbs=get;patch
// Its jobs name it as controller with blockOwnerDeletion (OwnerReferencesPermissionEnforcement).
// +kubebuilder:rbac:groups=kquant.dev,resources=quantcronjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=kquant.dev,resources=quantjobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=kquant.dev,resources=gpunodeprofiles,verbs=get;list;watch

// Reconcile creates the jobs that are due, deletes the history beyond its
// limits and writes the status; it requeues at the next schedule time.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cj := &kquantv1alpha1.QuantCronJob{}
	if err := r.client.Get(ctx, req.NamespacedName, cj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	jobs := &kquantv1alpha1.QuantJobList{}
	if err := r.client.List(ctx, jobs, client.InNamespace(cj.Namespace), client.MatchingFields{indexer.JobCronJobKey: cj.Name}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing jobs of %s: %w", req, err)
	}
	status := cj.Status.DeepCopy()
	active, err := r.history(ctx, cj, jobs.Items, status)
	if err != nil {
		return reconcile.Result{}, err
	}
	var result reconcile.Result
	if !cj.Spec.Suspend {
		if result, err = r.runSchedule(ctx, cj, jobs.Items, active, status); err != nil {
			return reconcile.Result{}, err
		}
		if err := r.driverChanges(ctx, cj, status); err != nil {
			return reconcile.Result{}, err
		}
	}
	slices.Sort(status.Active)
	status.Active = slices.Compact(status.Active)
	if !equality.Semantic.DeepEqual(&cj.Status, status) {
		if _, err := apply.QuantCronJobStatus(ctx, r.client, cj, status); err != nil {
			// A conflict: the cronjob changed since it was read; read it again.
			return conflict.Requeue(err)
		}
	}
	return result, nil
}

// olderFinished orders finished jobs oldest first: by completion time, then
// creation time, then name. Creation timestamps have one-second resolution,
// so two jobs created in the same second (a late start right after the job
// before it finished) need the completion time to keep the newer one.
func olderFinished(a, b *kquantv1alpha1.QuantJob) int {
	return cmp.Or(
		finishedAt(a).Compare(finishedAt(b)),
		a.CreationTimestamp.Compare(b.CreationTimestamp.Time),
		strings.Compare(a.Name, b.Name),
	)
}

func finishedAt(j *kquantv1alpha1.QuantJob) time.Time {
	if j.Status.CompletionTime == nil {
		return time.Time{}
	}
	return j.Status.CompletionTime.Time
}

// history sets status.active and lastSuccessfulTime from the created jobs,
// deletes finished jobs beyond the history limits and returns the active jobs.
func (r *Reconciler) history(ctx context.Context, cj *kquantv1alpha1.QuantCronJob, jobs []kquantv1alpha1.QuantJob, status *kquantv1alpha1.QuantCronJobStatus) ([]*kquantv1alpha1.QuantJob, error) {
	var active, succeeded, failed []*kquantv1alpha1.QuantJob
	status.Active = nil
	for i := range jobs {
		j := &jobs[i]
		switch j.Status.Phase {
		case kquantv1alpha1.JobPhaseSucceeded:
			succeeded = append(succeeded, j)
			if t := j.Status.CompletionTime; t != nil && (status.LastSuccessfulTime == nil || t.After(status.LastSuccessfulTime.Time)) {
				status.LastSuccessfulTime = t.DeepCopy()
			}
		case kquantv1alpha1.JobPhaseFailed:
			failed = append(failed, j)
		default:
			if j.DeletionTimestamp == nil {
				active = append(active, j)
				status.Active = append(status.Active, j.Name)
			}
		}
	}
	// More active jobs than a status write holds exist only when they were
	// created outside this controller's limit (by an earlier release): list
	// the first ones, and count them all against the limit.
	slices.Sort(status.Active)
	status.Active = status.Active[:min(len(status.Active), kquantv1alpha1.MaxActiveJobs)]
	for _, h := range []struct {
		jobs  []*kquantv1alpha1.QuantJob
		limit *int32
	}{{succeeded, cj.Spec.SuccessfulJobsHistoryLimit}, {failed, cj.Spec.FailedJobsHistoryLimit}} {
		if h.limit == nil || len(h.jobs) <= int(*h.limit) {
			continue
		}
		slices.SortFunc(h.jobs, olderFinished)
		for _, j := range h.jobs[:len(h.jobs)-int(*h.limit)] {
			if err := r.delete(ctx, cj, j); err != nil {
				return nil, err
			}
		}
	}
	return active, nil
}

// runSchedule creates the job of the most recent due schedule time, as CronJob.
func (r *Reconciler) runSchedule(ctx context.Context, cj *kquantv1alpha1.QuantCronJob, jobs []kquantv1alpha1.QuantJob, active []*kquantv1alpha1.QuantJob, status *kquantv1alpha1.QuantCronJobStatus) (reconcile.Result, error) {
	if cj.Spec.Schedule == "" {
		meta.RemoveStatusCondition(&status.Conditions, kquantv1alpha1.CronJobConditionScheduleValid)
		return reconcile.Result{}, nil
	}
	tz := ""
	if cj.Spec.TimeZone != nil {
		tz = *cj.Spec.TimeZone
	}
	sched, err := schedule.Parse(cj.Spec.Schedule, tz)
	if err != nil {
		// Retrying cannot fix a schedule: the cron job idles until its spec
		// changes, which reconciles it again.
		r.scheduleInvalid(cj, status, err)
		return reconcile.Result{}, nil
	}
	scheduleValid(cj, status)
	now := r.clock.Now()
	var deadline *time.Duration
	if s := cj.Spec.StartingDeadlineSeconds; s != nil {
		deadline = new(kquantv1alpha1.Seconds(*s))
	}
	var last *time.Time
	if status.LastScheduleTime != nil {
		last = &status.LastScheduleTime.Time
	}
	due := schedule.MostRecent(sched, cj.CreationTimestamp.Time, last, deadline, now)
	result := reconcile.Result{RequeueAfter: farHorizon}
	if !due.Next.IsZero() {
		result.RequeueAfter = due.Next.Sub(now)
	}
	if due.Time == nil {
		return result, nil
	}
	if due.Missed > schedule.MaxMissed {
		r.recorder.Eventf(cj, nil, corev1.EventTypeWarning, ReasonTooManyMissedTimes, "Schedule", "more than %d missed start times; check the clock; starting only the latest", schedule.MaxMissed)
	}
	name := JobName(cj.Name, *due.Time)
	switch {
	case due.TooLate:
		r.recorder.Eventf(cj, nil, corev1.EventTypeWarning, ReasonMissSchedule, "Schedule", "missed the start time %s: more than startingDeadlineSeconds ago", due.Time.UTC().Format(time.RFC3339))
		return result, nil
	case slices.ContainsFunc(jobs, func(j kquantv1alpha1.QuantJob) bool { return j.Name == name }):
		// Created already (the status write that should have followed failed).
	case cj.Spec.ConcurrencyPolicy == kquantv1alpha1.ConcurrencyForbid && len(active) > 0:
		r.recorder.Eventf(cj, nil, corev1.EventTypeNormal, ReasonJobAlreadyActive, "Schedule", "not starting the job of %s: %d jobs still active (concurrencyPolicy Forbid)", due.Time.UTC().Format(time.RFC3339), len(active))
		return result, nil
	default:
		if cj.Spec.ConcurrencyPolicy == kquantv1alpha1.ConcurrencyReplace {
			for _, j := range active {
				if err := r.delete(ctx, cj, j); err != nil {
					return reconcile.Result{}, err
				}
			}
			status.Active = nil
		}
		if r.atActiveLimit(cj, status, name, "schedule time "+due.Time.UTC().Format(time.RFC3339)) {
			// As under Forbid, the time is tried again (a job's end
			// reconciles the cron job) until its starting deadline.
			return result, nil
		}
		if err := r.create(ctx, cj, r.jobFor(cj, name, kquantv1alpha1.TriggerSchedule)); err != nil {
			return reconcile.Result{}, err
		}
		status.Active = append(status.Active, name)
		withinActiveLimit(cj, status)
	}
	status.LastScheduleTime = &metav1.Time{Time: *due.Time}
	return result, nil
}

// driverChanges creates a job for every node whose driver changed.
func (r *Reconciler) driverChanges(ctx context.Context, cj *kquantv1alpha1.QuantCronJob, status *kquantv1alpha1.QuantCronJobStatus) error {
	if cj.Spec.Triggers == nil || !cj.Spec.Triggers.DriverChange {
		return nil
	}
	profiles := &kquantv1alpha1.GPUNodeProfileList{}
	if err := r.client.List(ctx, profiles); err != nil {
		return fmt.Errorf("listing GPUNodeProfiles: %w", err)
	}
	changed, record := DriverChanges(status.NodeDrivers, profiles.Items)
	for i, d := range changed {
		name := DriverJobName(cj.Name, d)
		if r.atActiveLimit(cj, status, name, "driver change on node "+d.NodeName) {
			// The nodes not validated keep their old record, so that their
			// change is seen again once fewer jobs are active.
			record = keepRecords(record, status.NodeDrivers, changed[i:])
			break
		}
		job := r.jobFor(cj, name, kquantv1alpha1.TriggerDriverChange)
		sel := job.Spec.Placement.NodeSelector
		if sel == nil {
			sel = &metav1.LabelSelector{}
			job.Spec.Placement.NodeSelector = sel
		}
		if sel.MatchLabels == nil {
			sel.MatchLabels = map[string]string{}
		}
		sel.MatchLabels[HostnameLabel] = d.NodeName
		if err := r.create(ctx, cj, job); err != nil {
			return err
		}
		r.recorder.Eventf(cj, job, corev1.EventTypeNormal, ReasonDriverChanged, "Trigger", "node %s reports driver %s, CUDA %s: created job %s", d.NodeName, d.DriverVersion, d.CUDADriverVersion, job.Name)
		status.Active = append(status.Active, job.Name)
		withinActiveLimit(cj, status)
	}
	status.NodeDrivers = record
	return nil
}

// jobFor is the job the template stands for, named name and controlled by cj.
func (r *Reconciler) jobFor(cj *kquantv1alpha1.QuantCronJob, name, trigger string) *kquantv1alpha1.QuantJob {
	t := cj.Spec.JobTemplate.DeepCopy()
	job := &kquantv1alpha1.QuantJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cj.Namespace, Labels: t.Metadata.Labels, Annotations: t.Metadata.Annotations},
		Spec:       t.Spec,
	}
	if job.Labels == nil {
		job.Labels = map[string]string{}
	}
	if len(cj.Name) <= 63 {
		job.Labels[kquantv1alpha1.LabelCronJob] = cj.Name
	}
	if job.Annotations == nil {
		job.Annotations = map[string]string{}
	}
	job.Annotations[kquantv1alpha1.AnnotationTrigger] = trigger
	return job
}

// create creates job; one that exists already (a stale cache) is not an error.
func (r *Reconciler) create(ctx context.Context, cj *kquantv1alpha1.QuantCronJob, job *kquantv1alpha1.QuantJob) error {
	if err := controllerutil.SetControllerReference(cj, job, r.client.Scheme()); err != nil {
		return fmt.Errorf("owning job %s: %w", job.Name, err)
	}
	if err := r.client.Create(ctx, job); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("creating job %s: %w", job.Name, err)
	}
	r.recorder.Eventf(cj, job, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Create", "created job %s", job.Name)
	logging.FromContext(ctx).Info("Job created", "quantCronJob", client.ObjectKeyFromObject(cj), "quantJob", job.Name, "trigger", job.Annotations[kquantv1alpha1.AnnotationTrigger])
	return nil
}

// delete deletes job and its runs.
func (r *Reconciler) delete(ctx context.Context, cj *kquantv1alpha1.QuantCronJob, job *kquantv1alpha1.QuantJob) error {
	if err := r.client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting job %s: %w", job.Name, err)
	}
	r.recorder.Eventf(cj, job, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Delete", "deleted job %s", job.Name)
	return nil
}

// profileDriverChanged passes profile creations and driver version changes.
func profileDriverChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*kquantv1alpha1.GPUNodeProfile)
			n, ok2 := e.ObjectNew.(*kquantv1alpha1.GPUNodeProfile)
			return ok1 && ok2 && (o.Status.DriverVersion != n.Status.DriverVersion || o.Status.CUDADriverVersion != n.Status.CUDADriverVersion)
		},
		DeleteFunc: func(event.DeleteEvent) bool { return false },
	}
}

// triggered maps a profile event to every QuantCronJob with a driver trigger.
func (r *Reconciler) triggered(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &kquantv1alpha1.QuantCronJobList{}
	if err := r.client.List(ctx, list); err != nil {
		logging.FromContext(ctx).Error(err, "Listing QuantCronJobs")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if t := list.Items[i].Spec.Triggers; t != nil && t.DriverChange {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}})
		}
	}
	return out
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&kquantv1alpha1.QuantCronJob{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&kquantv1alpha1.QuantJob{}).
		Watches(&kquantv1alpha1.GPUNodeProfile{}, handler.EnqueueRequestsFromMapFunc(r.triggered), builder.WithPredicates(profileDriverChanged())).
		Complete(r)
}

// JobName is the deterministic name of the job for schedule time t.
func JobName(cronJob string, t time.Time) string {
	return fmt.Sprintf("%s-%d", cronJob, t.Unix()/60)
}
