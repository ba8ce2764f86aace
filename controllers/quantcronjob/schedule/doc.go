// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package schedule parses QuantCronJob schedules and computes their due
// times, as batch/v1 CronJob does, with bounded work and without panics: a
// schedule that names its own time zone or never fires is refused by Parse,
// and MostRecent steps a schedule at most MaxSteps times whatever the
// schedule, the clock or the history. It holds pure functions only, so that
// its fuzz target (FuzzSchedule) runs without an API server.
//
// The parser is robfig/cron v3.0.1, the one kube-controller-manager's CronJob
// controller uses, so that a schedule means here exactly what it means to
// batch/v1 CronJob. That release is unmaintained and has two faults that
// this package guards against rather than a second parser with semantics of its
// own (Kubernetes guards the same parser the same way):
//
//   - "CRON_TZ=UTC" (a zone prefix without a space) panics inside
//     ParseStandard: zone prefixes are refused before the parser sees them
//     (the CRD refuses them too; spec.timeZone is the one way to set a zone),
//     and a recover is the last line of defence around every call into it;
//   - a schedule that never fires ("0 0 31 2 *") makes Next return the zero
//     time, on which a loop "while Next <= now" never ends: such a schedule is
//     refused by Parse, and every step treats a zero Next as "never".
//
// Every computation of due times is bounded: MostRecent steps the schedule at
// most MaxSteps times, whatever the schedule, the clock or the history.
package schedule
