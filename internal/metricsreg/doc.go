// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package metricsreg holds what the manager's and the agent's Prometheus
// metrics share: the name of the label that splits a series by phase, the
// counter of objects entering a phase, and registering a set of collectors
// at once. The GPU identity labels are internal/gpulabels'.
package metricsreg
