// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package catalog embeds the cluster's recipe catalog, catalog.yaml: the
// ClusterQuantRecipes that hack/chart-sync.sh makes from recipes/*.yaml and
// the chart installs. A binary that must know TransformerEngine's recipes by
// name without an API server (the agent's preflight mode, where it may not
// read the catalog) reads them here, and gets exactly what the chart
// installs.
package catalog
