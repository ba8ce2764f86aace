// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package gpulabels names the labels that identify a GPU in kquant's
// Prometheus series, as NVIDIA's dcgm-exporter names them in its current
// release, so that kquant's series and DCGM_FI_* ones join in PromQL:
// hostname (the node), UUID, gpu (the NVML index), modelName, and for a MIG
// device the parent GPU's UUID and index with GPU_I_PROFILE and GPU_I_ID.
//
// The node's and the UUID's names changed between dcgm-exporter releases
// (Hostname became hostname in NVIDIA/dcgm-exporter#655; --use-old-namespace
// writes uuid), so those two are settings of the manager and the agent
// (RegisterFlags), and the chart sets both from one value.
package gpulabels
