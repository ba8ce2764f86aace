// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package remediation tests what kquant tells the fleet's remediation
// controllers: that the Medik8s NodeHealthCheck in
// docs/gates-and-schedules.md is valid by NodeHealthCheck's own CRD schema,
// and that it names only Node conditions a gate sets.
package remediation
