// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package quantcronjob is the controller of QuantCronJobs: it creates
// QuantJobs from spec.jobTemplate on a cron schedule and, with
// triggers.driverChange, on one node whenever that node's GPUNodeProfile
// reports a new driver or CUDA driver version. It is to QuantJob what the
// batch/v1 CronJob controller is to Job, and keeps its semantics:
//
//   - the most recent missed schedule time is run once (never a backlog), and
//     not at all when it is older than startingDeadlineSeconds; more than 100
//     missed times are reported with a TooManyMissedTimes event;
//   - concurrencyPolicy Allow, Forbid (skip while a created job is active; the
//     time is retried until its deadline) or Replace (delete the active jobs);
//   - job names are deterministic (<cronjob>-<minutes since the epoch> for the
//     schedule, <cronjob>-driver-<hash> for a trigger), so a stale cache never
//     creates a job twice; finished jobs beyond the history limits are deleted.
//
// Time comes from an injected clock (a fake one in tests). The schedule
// arithmetic (package schedule) and the driver-change detection (drivers.go)
// are pure functions. A schedule the controller cannot use sets the condition
// ScheduleValid to False, with a Warning Event, and the cron job idles until
// its spec changes; at most MaxActiveJobs jobs are active at once, and a job
// due beyond that is skipped with the condition ActiveLimitReached and an
// Event.
package quantcronjob
