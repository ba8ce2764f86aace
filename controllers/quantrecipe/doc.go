// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package quantrecipe is the QuantRecipe controller. It validates what the CRD's
// CEL rules cannot, computes status.key (the canonical text of the effective
// recipe) and status.format once per generation, and keeps status.nodes, the
// number of Ready nodes that run the recipe natively or emulated, current as
// profiles and agents' Leases change. It owns the whole status and the Ready
// condition. The same reconciler, built with NewCluster, does all of this for
// ClusterQuantRecipes, the cluster's catalog.
package quantrecipe
