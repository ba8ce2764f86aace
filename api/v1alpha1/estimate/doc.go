// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package estimate says about how long a run takes on the reference backend,
// the pure-Go quantizers an agent falls back to without a CUDA driver (make
// demo on a machine without a GPU, a simulated fleet). A job sized for GPUs
// can take hours there, and nothing else tells the user before it ends: the
// job controller puts this estimate in the job's ReferenceBackend condition.
//
// It is a pure function of the workload and the execution, an order of
// magnitude rather than a promise: the cost per element is measured once
// (kquantctl run on the reference backend) and the same for every recipe.
package estimate
