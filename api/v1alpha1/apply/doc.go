// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package apply is the one way kquant writes status: one writer per kind
// (QuantRunStatus, QuantJobStatus, QuantRecipeStatus,
// ClusterQuantRecipeStatus, QuantGatePolicyStatus, QuantCronJobStatus,
// GPUNodeProfileStatus), each a server-side apply of the status subresource
// with the generated typed apply configurations
// (api/v1alpha1/applyconfiguration), under the kind's field manager and
// conditional on the resourceVersion read. Before, each kind was written its
// own way (applies, a merge patch with an optimistic lock, an update), and
// some writers encoded their own structs to JSON and maps by hand, which
// controller-runtime warns against (zero values become owned fields).
//
// A field the typed struct marks omitempty is set only when it is not zero;
// one it always serialises is always set, so that an apply says exactly what
// encoding the typed object would, and the round-trip tests hold it to that.
//
// It also holds the field managers and the table of which of them owns which
// QuantRun status field (QuantRunStatusOwners), which docs/architecture.md
// repeats, each writer's tests check, and an envtest of package controllers
// checks against the managedFields of runs that ran.
package apply
