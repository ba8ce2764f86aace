// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package gpu is the CUDA backend of internal/quant: a quant.Backend that
// runs the recipes on a GPU with the kernels of package kernels, through
// the driver binding of internal/cuda, and returns the same bytes as the
// reference backend (internal/quant/reference).
//
// # Steps
//
// Every recipe step is a fixed sequence of kernel launches over device
// buffers bound to one shape (a Step): the input buffer, the recipe state
// (scale, amax, delayed-scaling history) and the output codes and scales.
// The same Step runs eagerly or is captured once into a CUDA graph and
// replayed; new input data is copied into the same input buffer before a
// replay, and no step allocates, synchronises or reads device values on the
// host. Per recipe:
//
//   - Float8CurrentScaling: amax+scale, then cast (rowwise only) or fused
//     cast+transpose (columnwise, both): 2 kernels.
//   - DelayedScaling: cast or cast+transpose with the amax fused into the
//     history's entry 0: 1 kernel; with Config.EndStep the cast's last
//     block then runs the delayed-scaling update on the device: still 1
//     kernel for a whole training step.
//   - MXFP8BlockScaling: one kernel for both operands of a 16-bit input
//     with cols % 8 == 0 (one read of the input), else one kernel per
//     operand; the tensor amax fused in either way, and the kernels write
//     the GEMM swizzled scales too (kernels.MXFP8Swizzled,
//     MXFP8BothSwizzled): no Swizzle launch. 32x32 weight tiles: one
//     kernel for the operands wanted, any input type and shape
//     (kernels.MXFP82D: one exponent per tile, the same codes for both
//     operands, both scale matrices and their swizzled layout, the amax).
//   - Float8BlockScaling: one kernel: 1x128 rowwise (kernels.BlockRow),
//     128x1 columnwise transposed (kernels.BlockCol), both in one pass
//     over the input (kernels.BlockRowCol), or 128x128 weight tiles for
//     both (kernels.Block2D). Power-of-2 or float32 scales and the epsilon
//     as the plan says.
//   - NVFP4BlockScaling: per operand, the tensor amax (a memset and a
//     kernel; the columnwise operand's over its random Hadamard transform
//     when the plan applies it; with both operands and the RHT, one
//     kernel takes both amaxes where the input's shape allows,
//     kernels.NVFP4Amaxes) and the quantize kernel, which writes the
//     codes, the E4M3 scales and their swizzled layout, with stochastic
//     rounding seeded by Request.Seed on the reference's Philox stream;
//     16x16 weight tiles: amax, one 2D kernel for both operands (two
//     memsets of the scales' padding) and one swizzle per operand.
//
// A tensor whose Config.Request has a NoOp gets a device-side no-op flag
// (TransformerEngine's, docs/recipes.md): every kernel of its launches
// reads the flag when it runs and returns at once when it holds 1, so a
// graph replay skips the tensor by a value written to device memory
// (Step.SetNoOp), leaving its outputs and state as they were.
//
// Kernels per step counts every launch, memsets included. Every scheme and
// option of quant.Recipe runs on the kernels; a plan they do not cover
// returns an error wrapping ErrNotImplemented (Backend.Covers says so
// beforehand), on which callers fall back to the reference backend.
// A Result's amax that no step kernel computes (block scaling has none; a
// columnwise-only NVFP4 step with the RHT has only the transform's) is
// computed by one more launch when the Result is read, outside the step.
//
// # Grouped (MoE) steps
//
// NewGroupedStep (and QuantizeGrouped, and Measure of a GroupedQuantize)
// quantize one [T, H] input in G groups of rows. The split sizes live in
// device memory (Step.SetSplits), kernels.GroupOffsets turns them into
// offsets and checks each group's alignment into a device flag, and a
// grouped kernel quantizes every group's rowwise operand in a fixed number
// of launches whatever G (block 1x128 and 128x128 weight tiles, either or
// both operands: 2, kernels.GroupedBlockRowCol and GroupedBlock2D), so one
// captured graph replays any split vector. Step.GroupError reads the flag
// after a run and names the misaligned group. Current scaling, delayed
// scaling and MXFP8 have grouped kernels too (kernels.GroupedCurrent,
// GroupedDelayed, GroupedMXFP8 and, for 32x32 weight tiles,
// GroupedMXFP82D: 3 launches, both operands). Delayed scaling
// keeps every group's state on the device (scale[G] and the amax histories
// [G][L], set and read per group with Step.SetState and Step.State); its
// cast records each group's amax into history entry 0 and, with
// GroupedConfig.EndStep, one more launch's block per group runs that
// group's update. NVFP4 has them as well (kernels.GroupedNVFP4, 1D, either
// or both operands with the columnwise RHT and stochastic rounding on each
// group's own Philox stream: 3 to 5 launches; GroupedNVFP4TwoD, 16x16
// weights: 3, plus a memset per padded scale layout), on every shape (tiled
// fast paths where the columns are a multiple of 64, general paths
// otherwise; see grouped_nvfp4.go). Every recipe and role has a grouped
// kernel, so a grouped step never runs one group at a time; the benchmarks
// that compare with that older path build it in their test files.
//
// # QuantizedLinear
//
// Backend.QuantizedLinear quantizes X and W rowwise with this backend,
// dequantizes them on the device and multiplies them with the float32
// GEMM kernel, and the unquantized product with the same kernel; Y
// matches the reference's within float32 summation order (see there).
//
// Backend.Quantize and the other quant.Backend methods build (or reuse: the
// buffers of the last few shapes are kept) a Step, copy the tensor in, run
// the step eagerly and copy the result out. The input is sent to the device
// in the narrowest type that holds it exactly (BF16, FP16 or FP32), as a
// training framework would hand it over, so that the kernels read what they
// would read in training.
//
// # Files
//
// A step is organised by scheme family, not by phase: fp8_pertensor.go
// (current and delayed scaling), fp8_block.go, mxfp8.go and nvfp4.go each
// own what their family allocates, launches and reads back, for plain and
// grouped steps, behind the family interface (family.go). step.go,
// buffers.go and grouped.go keep what every family shares: buffers
// (allocated per operand, decoded when read), inputs and states, capture
// and replay, snapshots and the walk over the groups.
//
// # Measurements
//
// Backend implements measure.Measurer: GPU time per step with CUDA events,
// bytes moved, the device-to-device copy bandwidth of the same process,
// host time per eager step and per graph replay, kernels per step, and
// whether the graph replay gives the eager bytes. Backend.Baselines
// measures the node baselines (single launch and single-node graph launch
// latency, copy bandwidth), which cmd/agent publishes through its
// baseline.Prober: this package knows nothing of the agent.
//
// # Selection
//
// New opens device 0 (kquantctl); Runtime opens one Backend per device for
// the node agent (Runtime.BackendFor is bench.Runner's BackendFor). Without
// a CUDA driver both return an error for which cuda.IsNoDriver is true.
package gpu
