// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package validation checks kquant's specs the way the API server's schema
// and CEL rules do, plus what they cannot express (an amaxEpsilon finite in
// float32, explicit group sizes adding up to each shape's rows). It is the
// one place these rules are written: the recipe and job controllers, the
// measurement engine and kquantctl (which runs manifests without an API
// server) all call it, as cert-manager's internal/apis/.../validation is
// called by every component that must check an object.
//
// Errors are field.ErrorList values naming the manifest's fields
// (spec.format, spec.workload.groups.sizes).
package validation
