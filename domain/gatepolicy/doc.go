// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package gatepolicy says what a QuantGatePolicy's validation is as a
// QuantJob (JobFor): the policy's validation settings on its
// ClusterQuantRecipe, always in mode Validation, labelled with the policy.
// Both the policy's periodic jobs (controllers/gatepolicy) and its idle
// validations (controllers/idlevalidation) are built from it, so the two
// never disagree on what the policy validates.
package gatepolicy
