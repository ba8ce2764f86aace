// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package idlevalidation is the controller of a QuantGatePolicy's
// spec.idleValidation: it spends the time a node's GPUs sit unallocated on
// the policy's validation, and gives the GPUs back the moment a workload
// wants them.
//
// Idle is the kubelet's word, not a guess: a node is idle once every GPU of
// its GPUNodeProfile has status.gpus[].freeSince (the agent sets it from the
// PodResources List; a MIG slice, a shared replica or a DRA claim of a GPU
// holds it too) and the latest of them is idleFor ago. A node whose agent
// does not read the allocations has no freeSince and is never idle.
//
// For such a node the controller creates one validation QuantJob of the
// policy (domain/gatepolicy.JobFor, narrowed to the node by its
// kubernetes.io/hostname label), controlled by the policy so that its runs
// gate the node like any other validation (package gate), labelled
// kquant.dev/idle-validation=true and annotated with the node's name
// (kquant.dev/idle-node). Its work is bounded:
//   - at most one idle job per node is in flight;
//   - a node's next idle job starts no sooner than interval after its last,
//     and only once the node has been idle for idleFor again (the last
//     job's own run pods held its GPUs);
//   - the names are deterministic, <policy>-idle-<hash of node>-<interval
//     index>, so a stale cache never creates one twice;
//   - of each node's finished idle jobs only the newest is kept, the one
//     that says when the node was last validated, and it goes interval
//     after it finished (ttlSecondsAfterFinished), when it no longer holds
//     anything back;
//   - one pass creates at most MaxCreatesPerPass jobs.
//
// The runs inherit the label, and the execution controller gives their run
// pods the idle PriorityClass (runpod.IdlePriorityClass): the lowest
// priority, preemptionPolicy Never. Any pod that wants the GPU preempts them;
// the run fails as RunPodLost, a disruption that says nothing about the GPU,
// and the job's disruptionLimit of 0 ends the job there instead of retrying
// it in a loop on a node that is no longer idle.
//
// Decide is a pure function of one node's idle time, its last idle job and
// the clock; the Reconciler (one request per policy) applies it to every
// node and requeues at the earliest time a node becomes due. Time comes from
// an injected clock.
package idlevalidation
