// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConcurrencyPolicy says what a QuantCronJob does when a job is due while an
// earlier one is still active, as batch/v1 CronJob's.
// +kubebuilder:validation:Enum=Allow;Forbid;Replace
type ConcurrencyPolicy string

const (
	// ConcurrencyAllow starts the new job beside the active ones.
	ConcurrencyAllow ConcurrencyPolicy = "Allow"
	// ConcurrencyForbid skips the new job while one is active.
	ConcurrencyForbid ConcurrencyPolicy = "Forbid"
	// ConcurrencyReplace deletes the active jobs and starts the new one.
	ConcurrencyReplace ConcurrencyPolicy = "Replace"
)

// LabelCronJob labels the QuantJobs a QuantCronJob created with its name.
const LabelCronJob = "kquant.dev/cronjob"

// AnnotationTrigger says why a QuantCronJob created a job: "schedule" or
// "driverChange".
const AnnotationTrigger = "kquant.dev/trigger"

// Trigger values of AnnotationTrigger.
const (
	TriggerSchedule     = "schedule"
	TriggerDriverChange = "driverChange"
)

// QuantJobTemplate is the QuantJob a QuantCronJob creates.
type QuantJobTemplate struct {
	// metadata holds the labels and annotations the created jobs get.
	// +optional
	Metadata QuantJobTemplateMetadata `json:"metadata,omitempty"`
	// spec is the created jobs' spec.
	// +required
	Spec QuantJobSpec `json:"spec"`
}

// QuantJobTemplateMetadata is the part of a created job's metadata that the
// template sets.
type QuantJobTemplateMetadata struct {
	// labels are copied onto each created job.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// annotations are copied onto each created job.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Triggers are events, besides the schedule, that create a job.
type Triggers struct {
	// driverChange creates a job restricted to one node (by its
	// kubernetes.io/hostname label) when that node's GPUNodeProfile reports a
	// driver or CUDA driver version other than the one last seen, as after a GPU
	// Operator driver upgrade. The first version seen of a node is recorded
	// without a job.
	// +optional
	DriverChange bool `json:"driverChange,omitempty"`
}

// QuantCronJobSpec is when to create QuantJobs and from what.
// +kubebuilder:validation:XValidation:rule="has(self.schedule) || (has(self.triggers) && self.triggers.driverChange)",message="spec needs a schedule or triggers.driverChange"
type QuantCronJobSpec struct {
	// schedule is a cron expression (five fields, or a descriptor such as
	// @daily or "@every 2h"), as batch/v1 CronJob's. It cannot name a time
	// zone (TZ= or CRON_TZ=): spec.timeZone does. A day of month that its
	// month never has, such as "0 0 31 2 *", is refused. A schedule that the
	// admission rules let through and the controller cannot use (a list or
	// range that never fires, an unknown zone) sets the condition
	// ScheduleValid to False and creates no job.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="!self.contains('TZ=')",message="spec.schedule must not name a time zone (TZ= or CRON_TZ=); set spec.timeZone"
	// +kubebuilder:validation:XValidation:rule="self.matches('^[ \\t]*(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|@every [0-9a-z.]+|[0-9A-Za-z*/,?-]+([ \\t]+[0-9A-Za-z*/,?-]+){4})[ \\t]*$')",message="spec.schedule must be five cron fields (digits, names, * / , - ?) or a descriptor (@hourly, @daily, @weekly, @monthly, @yearly, @every <duration>)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[ \\t]*[0-9A-Za-z*/,?-]+[ \\t]+[0-9A-Za-z*/,?-]+[ \\t]+0*(30|31)[ \\t]+0*(2|[Ff][Ee][Bb])[ \\t]+[*?][ \\t]*$') && !self.matches('^[ \\t]*[0-9A-Za-z*/,?-]+[ \\t]+[0-9A-Za-z*/,?-]+[ \\t]+0*31[ \\t]+0*(4|6|9|11|[Aa][Pp][Rr]|[Jj][Uu][Nn]|[Ss][Ee][Pp]|[Nn][Oo][Vv])[ \\t]+[*?][ \\t]*$')",message="spec.schedule never fires: its day of month does not exist in its month"
	Schedule string `json:"schedule,omitempty"`

	// timeZone is the IANA time zone of the schedule, for example
	// Europe/Berlin; the manager's local time zone when unset. A name the
	// manager's time zone database does not know sets the condition
	// ScheduleValid to False.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$`
	TimeZone *string `json:"timeZone,omitempty"`

	// startingDeadlineSeconds is how late a scheduled job may still start; a
	// missed time older than this is skipped. Unset: no deadline (but at most
	// the last of 100 missed times is started, as CronJob's). At most 366 days.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=31622400
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`

	// concurrencyPolicy is Allow, Forbid (default: a validation must not race
	// itself on the same GPUs) or Replace. Under any policy at most 100 jobs
	// (MaxActiveJobs) of one QuantCronJob are active: a job due beyond that is
	// skipped, with the condition ActiveLimitReached and an Event.
	// +optional
	// +kubebuilder:default=Forbid
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`

	// suspend stops new scheduled and triggered jobs; active ones go on.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// triggers create jobs on events besides the schedule.
	// +optional
	Triggers *Triggers `json:"triggers,omitempty"`

	// successfulJobsHistoryLimit is how many succeeded jobs are kept. Default 3.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	SuccessfulJobsHistoryLimit *int32 `json:"successfulJobsHistoryLimit,omitempty"`

	// failedJobsHistoryLimit is how many failed jobs are kept. Default 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	FailedJobsHistoryLimit *int32 `json:"failedJobsHistoryLimit,omitempty"`

	// jobTemplate is the QuantJob to create.
	// +required
	JobTemplate QuantJobTemplate `json:"jobTemplate"`
}

// NodeDriver is the driver a node reported when a QuantCronJob last looked.
type NodeDriver struct {
	// nodeName is the node (and GPUNodeProfile) name.
	// +required
	NodeName string `json:"nodeName"`
	// driverVersion is the profile's status.driverVersion.
	// +optional
	DriverVersion string `json:"driverVersion,omitempty"`
	// cudaDriverVersion is the profile's status.cudaDriverVersion.
	// +optional
	CUDADriverVersion string `json:"cudaDriverVersion,omitempty"`
}

// MaxActiveJobs is how many jobs of one QuantCronJob may be active at once,
// whatever created them (the schedule under concurrencyPolicy Allow, or
// driver-change triggers across a fleet): a job due beyond it is skipped, and
// status.active (whose MaxItems is this number) always fits its status write.
const MaxActiveJobs = 100

// QuantCronJob condition types.
const (
	// CronJobConditionScheduleValid is True (reason Valid) when spec.schedule
	// and spec.timeZone parse and the schedule fires at some time, and False
	// (reason InvalidSchedule, with the parser's message) when they do not:
	// the schedule then creates no job until it is fixed. Unset without a
	// schedule.
	CronJobConditionScheduleValid = "ScheduleValid"
	// CronJobConditionActiveLimitReached is True (reason TooManyActiveJobs)
	// when the last due job, scheduled or triggered, was skipped because
	// MaxActiveJobs jobs were active, and False (reason WithinLimit) once a
	// due job was created again.
	CronJobConditionActiveLimitReached = "ActiveLimitReached"
)

// QuantCronJob condition reasons.
const (
	// ReasonScheduleValid (ScheduleValid True): the schedule parses and fires.
	ReasonScheduleValid = "Valid"
	// ReasonInvalidSchedule (ScheduleValid False): the schedule or time zone
	// does not parse, or the schedule never fires.
	ReasonInvalidSchedule = "InvalidSchedule"
	// ReasonTooManyActiveJobs (ActiveLimitReached True): a due job was skipped
	// because MaxActiveJobs jobs were active.
	ReasonTooManyActiveJobs = "TooManyActiveJobs"
	// ReasonWithinLimit (ActiveLimitReached False): due jobs are created.
	ReasonWithinLimit = "WithinLimit"
)

// QuantCronJobStatus is what the controller observed of a QuantCronJob.
type QuantCronJobStatus struct {
	// active names the created jobs that have not finished (at most
	// MaxActiveJobs).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	Active []string `json:"active,omitempty"`
	// lastScheduleTime is the schedule time of the last job the schedule created.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// lastSuccessfulTime is when the last created job succeeded.
	// +optional
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`
	// nodeDrivers are the driver versions last seen per node (triggers.driverChange).
	// +optional
	// +listType=map
	// +listMapKey=nodeName
	// +kubebuilder:validation:MaxItems=10000
	NodeDrivers []NodeDriver `json:"nodeDrivers,omitempty"`
	// conditions: ScheduleValid and ActiveLimitReached.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// QuantCronJob creates QuantJobs on a schedule and when a node's driver
// changes: what a batch/v1 CronJob is to a Job.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=qcj,categories=kquant
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Recipe",type=string,JSONPath=`.spec.jobTemplate.spec.recipeRef.name`
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Last-Schedule",type=date,JSONPath=`.status.lastScheduleTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type QuantCronJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is when to create jobs and from what.
	// +required
	Spec QuantCronJobSpec `json:"spec"`

	// status is written by the controller.
	// +optional
	Status QuantCronJobStatus `json:"status,omitempty"`
}
