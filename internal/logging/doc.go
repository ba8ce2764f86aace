// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package logging is kquant's one logging setup: the flags both binaries
// take (-v, --log-format), the logger they build from them (log/slog behind
// logr, JSON or text), the verbosity ladder every package logs at, and the
// one way to get a logger from a context.
//
// The ladder, written once:
//
//	V(Info)  = 0  transitions a user cares about and failures: job phases,
//	              lost nodes, runs started and finished, profiles published
//	V(Debug) = 1  each decision and write: bindings, label patches, runs
//	              ignored or waiting for their GPU, Lease renewals, XID events
//	V(Trace) = 2  status details computed on every reconcile
//
// Code logs through FromContext(ctx), which is logr's own context logger:
// controller-runtime puts its per-reconcile logger there, the binaries put
// theirs in the root context, and a context without one discards. Messages
// are constant and capitalised, variable data lowerCamel key/value pairs.
//
// It lives under the module's internal/ rather than cmd/internal/, so that
// the packages that log (controllers/, agent/) can name the levels; it
// imports only logr and the standard library, so any layer may use it.
package logging
