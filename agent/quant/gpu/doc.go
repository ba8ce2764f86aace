// Package gpu is the CUDA backend of agent/quant: a quant.Backend that
// runs the recipes on a GPU with the kernels of package kernels, through
// the driver binding of agent/cuda, and returns the same bytes as the
// reference backend (agent/quant/reference).
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
//     history's entry 0: 1 kernel; with Config.EndStep the delayed-scaling
//     update follows on the device: 2 kernels, a whole training step.
//   - MXFP8BlockScaling: one kernel for both operands of a 16-bit input
//     with cols % 8 == 0 (one read of the input), else one kernel per
//     operand; the tensor amax fused in either way.
//
// Float8BlockScaling, NVFP4BlockScaling and MXFP8 with 32x32 weight tiles
// return an error wrapping ErrNotImplemented that names what is missing, so
// that callers can fall back to emulation on the reference backend. The
// GEMM swizzle of MXFP8 scales is done on the host when a Result is read
// (the swizzle kernel belongs to the next kernels issue).
//
// Backend.Quantize and the other quant.Backend methods build (or reuse: the
// buffers of the last few shapes are kept) a Step, copy the tensor in, run
// the step eagerly and copy the result out. The input is sent to the device
// in the narrowest type that holds it exactly (BF16, FP16 or FP32), as a
// training framework would hand it over, so that the kernels read what they
// would read in training.
//
// # Measurements
//
// Backend implements bench.Measurer: GPU time per step with CUDA events,
// bytes moved, the device-to-device copy bandwidth of the same process,
// host time per eager step and per graph replay, kernels per step, and
// whether the graph replay gives the eager bytes. Backend.Baselines
// measures the node baselines (single launch and single-node graph launch
// latency, copy bandwidth) that Prober publishes through agent/baseline.
//
// # Selection
//
// New opens device 0 (kquantctl); Runtime opens one Backend per device for
// the node agent (Runtime.BackendFor is bench.Runner's BackendFor, and
// Runtime.Prober its baseline.Prober). Without a CUDA driver both return an
// error for which cuda.IsNoDriver is true.
package gpu
