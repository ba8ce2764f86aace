// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package supportlabels owns the recipe-support Node labels and the recipe
// families they name: kquant.dev/fp8, kquant.dev/fp8-block, kquant.dev/mxfp8
// and kquant.dev/nvfp4, each "native" or "emulated" (Desired, from a node's
// GPUNodeProfile), and the changes that bring a node's labels there
// (Changes). The nodelabels controller writes them; the gate names its keys
// and conditions after the same families (Family, Families), so the two agree
// on what a family is without importing each other.
package supportlabels
