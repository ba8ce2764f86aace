// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package scheduling holds kquant's placement policy as pure functions: which
// nodes and GPUs are eligible for a job and, when none is, why (the "0/12 nodes:
// 8 lack native MXFP8 ..." message); how a job expands into slots; and which free
// GPU each pending run is bound to. Nothing here talks to the API server, so
// every rule is table-tested without envtest; the controllers gather the inputs
// from their caches and write the outcome.
package scheduling
