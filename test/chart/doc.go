// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package chart tests kquant's installation manifests: the Helm chart in
// charts/kquant and the kustomize configuration in config/default.
//
// The chart is linted and rendered with default and non-default values, and
// every rendered object is applied with server-side dry-run to a real
// kube-apiserver (test/testenv), after the CRDs it needs were applied for real.
// Bad values must fail the render through values.schema.json. The chart's
// copies of the generated CRDs and RBAC roles must equal what `make manifests`
// generates, and config/default must render the same objects as the chart.
// docs/security.md's permissions table must list exactly what the chart's
// RBAC grants, each row with its why (TestSecurityPagePermissions; -update
// rewrites the table).
//
// Helm is built from hack/tools/helm into bin/helm when $HELM is unset.
package chart
