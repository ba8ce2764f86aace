// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package runpodsim stands in, beside KWOK's simulated kubelets, for the two
// things a cluster does with kquant's run pods that KWOK does not: the
// scheduler's binding and the run pod's container. It exists for the scale
// harness (test/scale) in run-pod mode, the chart's default.
//
// For each run pod (app.kubernetes.io/component=run):
//   - unscheduled, it binds the pod to the node its required node affinity
//     names, with the same pods/binding the kube-scheduler would make (its
//     Scheduled event left out);
//   - once KWOK reports it Running, it executes the run exactly as the run
//     pod's container does, through agent/runmode.Execute: the same reads
//     of the run and the same status applies under the run pod's field
//     manager, with the one GPU the device plugin gave the pod (the run's
//     bound GPU of a simulated node) and the synthetic runner of
//     `--results synthetic`;
//   - then it records the container's exit as a kubelet does, in one
//     status patch: the pod Succeeded (exit code 0) or Failed (1), the
//     container terminated with the run's termination message, from which
//     the manager records a run whose own write never landed.
//
// What differs from a real run pod: the requests carry the harness's
// credentials rather than the pod's bound token (the admission policies are
// not installed in the harness's API server), and one process stands in for
// every run pod.
package runpodsim
