// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package arch checks the import graph against the layering of
// docs/architecture.md: every arrow points down (api, the driver binding
// and the kernels at the bottom; the engine under internal/; the daemon and
// the manager above it; the binaries and tests on top). A new import that
// points up fails TestImportsPointDown with the rule it breaks, and a
// hand-written production file past its size budget fails
// TestProductionFilesStayWithinBudget.
package arch
