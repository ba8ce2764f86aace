// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package hooks is what the chart's Helm hooks run, through kquant-manager,
// so that they need no image but kquant's own (air-gapped clusters mirror one
// image, and the local cluster has no registry).
//
// ApplyCRDs (--apply-crds, the pre-upgrade hook) server-side applies the
// chart's CRDs before an upgrade: Helm installs crds/ once and never upgrades
// it.
//
// Uninstall (--uninstall, the post-delete hook) takes kquant's marks off the
// cluster when the release is deleted. It waits until the release's manager
// and agent pods are gone (so that neither puts a label or a profile back),
// then deletes every GPUNodeProfile and removes from every Node the labels and
// taints in kquant's domain or its subdomains (kquant.dev/fp8,
// gate.kquant.dev/fp8). The CRDs, and with them the
// recipes, jobs and runs, stay: Helm never deletes CRDs, and deleting them is
// the user's decision.
package hooks
