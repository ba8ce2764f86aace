// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package metrics holds kquant's Prometheus metrics. Counters and histograms
// are fed by the controllers; gauges (pending runs, unschedulable jobs) are
// computed from the cache at scrape time, so a deleted object never leaves a
// stale series. Everything is registered with the registry passed to Register
// (controller-runtime's in the manager), never in init.
//
//	kquant_runs_total{phase}                 runs that entered phase, as the manager saw them
//	kquant_run_scheduling_latency_seconds    binding latency: from run creation to binding to a GPU
//	kquant_runs_pending                      runs waiting for a GPU (the queue depth)
//	kquant_runs{phase}, kquant_jobs{phase}   runs and jobs stored now, by phase
//	kquant_jobs_unschedulable                jobs with no eligible GPU
//
// Per GPU, labelled as dcgm-exporter labels its series (hostname, UUID, gpu as
// the NVML index, modelName, and for a MIG device the parent GPU's UUID and
// index with GPU_I_PROFILE and GPU_I_ID) so that the two join in PromQL, in
// base units; the node's and the UUID's label names are settings
// (package gpulabels) for exporters older than dcgm-exporter#655:
//
//	kquant_gpu_info{computeCapability,driverVersion}             from GPUNodeProfiles
//	kquant_gpu_recipe_support{scheme,support}                    1 for the GPU's support, 0 otherwise
//	kquant_gpu_verdict{quantjob,recipe,scheme,mode,verdict}      latest finished run of each job on the GPU
//	kquant_gpu_snr_decibels, kquant_gpu_bandwidth_bytes_per_second,
//	kquant_gpu_host_eager_seconds, kquant_gpu_host_graph_seconds,
//	kquant_gpu_run_completion_timestamp_seconds                  the same runs' results
//	kquant_gpu_last_success_timestamp_seconds{recipe,scheme}     last passing Validation run
//
// The gauges describe the cluster, not the replica: only the leader exports
// them, so that a fleet-wide sum() counts each GPU once whatever the number of
// manager replicas. The counters and the histogram are the replica's own.
//
// Work queue depth and reconcile latency per controller are
// controller-runtime's own (workqueue_depth{name}, ...), not repeated here.
package metrics
