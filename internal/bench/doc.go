// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package bench is kquant's measurement engine, shared by the node agent
// (through Runner, the agent executor's Runner) and kquantctl (through
// Engine): given a recipe, a workload, an execution, tolerances and a mode,
// it generates each shape's input deterministically, runs the operation on a
// quant.Backend, measures accuracy and cost, judges the verdict and returns
// v1alpha1.RunResults.
//
// Per shape, in order:
//
//  1. Input: workload.Generate with the workload's distribution, seed and
//     input dtype; stream i for shape i (QuantizedLinear: 2i for the input,
//     2i+1 for the weight), so that shapes are independent and every node
//     and kquantctl get the same bytes.
//  2. Accuracy step: one quantize (both operands; QuantizedLinear through
//     package linear). DelayedScaling is first calibrated on the same input
//     (one quantize and one state update), as package linear does, so that
//     the figures describe a realistic scale rather than the initial 1.
//     Accuracy is the rowwise operand's against the input (package
//     accuracy); for GroupedQuantize over the whole tensor, for
//     QuantizedLinear the layer output's SNR and error, with the operands'
//     saturated and flushed counts. A backend that is not the reference is
//     compared byte for byte with the reference backend (quant.SameBytes).
//  3. Observer: the tensors go to Engine.Observer (kquantctl's dumps).
//  4. Timing: a backend implementing measure.Measurer (the CUDA backend: events,
//     eager and graph host time, kernels per step, bytes moved and the copy
//     bandwidth of the same process) measures the step itself, in both
//     modes. Any other backend is timed by the engine on the CPU in
//     Benchmark mode only: the median wall time of one step on one
//     goroutine, reported as overhead.hostEagerMicros with backend
//     "reference" — a CPU figure, since that backend has no device; the GPU
//     fields stay empty.
//
// Results: numbers are decimal strings with units in the field names; the
// top-level overhead and performance are the largest shape's (rows x
// cols), the top-level accuracy is the worst over the shapes field by
// field (lowest SNR, largest error and counts). The verdict (Judge) has a
// stable CamelCase reason: Fail for AlignmentViolation, NotBitExact (with
// requireBitExact), ReplayMismatch, SNRBelowTolerance; Warn for
// NotBitExact (without requireBitExact), NotCapturable, Saturated; Skip for
// RecipeUnsupported; else Pass. RunResults.Explain (api/v1alpha1) says it
// in a sentence, the same one kquantctl prints and a run stores.
//
// A grouped workload's split sizes are aligned to the recipe (Splits); a
// misaligned group is a Fail verdict naming the group, checked before the
// backend sees it so that every backend reports it the same way. In the
// cluster and in kquantctl, explicit sizes off the alignment never get
// here: QuantRunSpec's CEL rule refuses them as input. Shapes
// beyond Engine.MaxElements are refused with ErrTooLarge before anything is
// allocated. The context is checked between steps.
package bench
