// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package v1alpha1 holds the kquant.dev/v1alpha1 API: QuantRecipe (a
// TransformerEngine-style quantization recipe), QuantJob (benchmark or validate a
// recipe on a workload across the fleet), QuantRun (one unit of a job bound to one
// GPU) and GPUNodeProfile (what one node's GPUs can do, written by its agent).
//
// Measured values are decimal strings with the unit in the field name, never
// floats, so that every client round-trips them exactly.
//
// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=true
// +groupName=kquant.dev
package v1alpha1
