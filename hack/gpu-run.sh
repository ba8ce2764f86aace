#!/usr/bin/env bash
# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# Runs the GPU test suite built by hack/gpu-bundle.sh on a machine with an
# NVIDIA GPU and driver (no Go needed), from the repository root.
#
# Usage: hack/gpu-run.sh DIR OUT [STAGES]   (comma-separated; default tests)
#   tests  every gpu-tagged test: bit-exactness against the reference,
#          graph replays, grouped steps, payloads (the default)
#   tests80 the kernels and internal/gpu tests on the compute_80 PTX
#          (KQUANT_PTX_TARGET=compute_80: Ampere's software conversions)
#   bench  bench-agent (gpu.test -test.run Benchmark: every recipe through
#          Measure, the agent's path), bench-kernels (kernels.test -test.run
#          'Measure|Bench') and torch (hack/torch_bench.py where PyTorch is
#          installed), each also a stage of its own
#   profile one launch of each quantize kernel at 16384x8192 / 16384^2 under
#          ncu (KQUANT_PROFILE=1 ... -test.run 'Profile'): duration, DRAM,
#          L2 and issue-slot utilisation, occupancy, registers, grid,
#          warp-instructions, stall reasons (ncu.csv; KQUANT_PROFILE_SHAPES=
#          8192x8192,16384x8192 runs it at each shape, ncu-SHAPE.csv)
# With nvcc on PATH (and KQUANT_NO_REGEN unset) the PTX and the cubins are first regenerated from kernels/*.cu into
# ptx/ and loaded from there (KQUANT_PTX_DIR), so the run also checks that
# the committed PTX and cubins are what the sources give. KQUANT_PTX_TARGET=compute_80
# runs the suite on the compute_80 PTX (Ampere's software FP8 conversions)
# whatever the GPU. OUT receives summary.txt (the
# GPU, pass/fail counts per binary, failures) and results.tgz (every log and
# the regenerated PTX): two files, since a device call returns only a few.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
dir=$1 dest=$2 what=,${3:-tests},
out=/tmp/kq-results
rm -rf "$out" /tmp/kq-suite
mkdir -p "$out" "$dest" /tmp/kq-suite
for f in "$dir"/*.test.xz; do xz -dc "$f" >"/tmp/kq-suite/$(basename "$f" .xz)"; chmod +x "/tmp/kq-suite/$(basename "$f" .xz)"; done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/summary.txt"
if command -v nvcc >/dev/null && [ -z "${KQUANT_NO_REGEN:-}" ]; then
	hack/gen-kernels.sh "$out/ptx" >"$out/gen-kernels.log" 2>&1 || { echo "PTX generation failed" | tee -a "$out/summary.txt"; }
	for p in kernels/*.ptx.xz kernels/ptx80/*.ptx.xz kernels/sass/*/*.cubin.xz; do
		rel=${p#kernels/}
		cmp -s <(xz -dc "$p" | tail -n +2) <(xz -dc "$out/ptx/$rel" | tail -n +2) && s=same || s=DIFFERENT
		echo "regenerated $rel: $s as committed" | tee -a "$out/summary.txt"
	done
	export KQUANT_PTX_DIR=$out/ptx
else
	# The bundle's binaries embed no code (gpu-bundle.sh): the checkout's.
	export KQUANT_PTX_DIR=$PWD/kernels
fi
run() { # binary, log name, extra args...
	local bin=$1 log=$2
	shift 2
	if [ ! -x /tmp/kq-suite/"$bin" ]; then
		# hack/gpu-bundle.sh DIR PKG... builds a part of the suite.
		echo "$log: skipped, $bin is not in $dir" | tee -a "$out/summary.txt"
		return
	fi
	/tmp/kq-suite/"$bin" -test.v -test.count=1 "$@" >"$out/$log.log" 2>&1
	local rc=$?
	echo "$log: rc=$rc pass=$(grep -c -- '^--- PASS\|^    --- PASS' "$out/$log.log") fail=$(grep -c -- '--- FAIL' "$out/$log.log") skip=$(grep -c -- '--- SKIP' "$out/$log.log")" | tee -a "$out/summary.txt"
	pack
}
# pack copies what there is to DEST after every stage, so that a run cut
# short by a time limit still returns the finished stages.
pack() {
	cp "$out/summary.txt" "$dest/"
	tar czf "$dest/results.tgz" -C "$out" .
}
case $what in
*,tests,*)
	export KQUANT_EXPECT_GPU=1
	run cuda.test cuda -test.timeout=5m
	run nvml.test nvml -test.timeout=2m
	# The two large suites share the GPU at once: they are bound by their
	# CPU reference computations, and bit-exactness does not depend on
	# timing.
	run kernels.test kernels -test.timeout=9m &
	run gpu.test gpu -test.timeout=9m &
	wait
	;;
esac
# tests80: the kernels and internal/gpu suites again on the compute_80 PTX
# (Ampere and Ada's: software FP8 conversions), which must give the same
# bytes on any GPU.
case $what in
*,tests80,*)
	export KQUANT_EXPECT_GPU=1
	KQUANT_PTX_TARGET=compute_80 run kernels.test kernels-compute_80 -test.timeout=9m &
	KQUANT_PTX_TARGET=compute_80 run gpu.test gpu-compute_80 -test.timeout=9m &
	wait
	;;
esac
# bench = bench-agent (every recipe through Measure, the agent's path),
# bench-kernels (the kernel-level tables) and torch.
case $what in *,bench,*) what=$what,bench-agent,bench-kernels,torch, ;; esac
case $what in
*,bench-agent,*) export KQUANT_BENCH=1; run gpu.test gpu-bench -test.timeout=9m -test.run 'Benchmark' ;;
esac
case $what in
*,bench-kernels,*) export KQUANT_BENCH=1; run kernels.test kernels-bench -test.timeout=9m -test.run 'Measure|Bench' ;;
esac
case $what in
*,torch,*)
	if python3 -c 'import torch' 2>/dev/null; then
		PYTHONUNBUFFERED=1 python3 hack/torch_bench.py >"$out/torch.log" 2>&1
		echo "torch: rc=$?" | tee -a "$out/summary.txt"
	else
		echo "torch: PyTorch not installed" | tee -a "$out/summary.txt"
	fi
	pack
	;;
esac
case $what in
*,profile,*)
	metrics=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed
	metrics=$metrics,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes.sum,sm__inst_issued.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread
	# Warp-instructions (per element: x 32 / elements), which tell an issue-bound kernel.
	metrics=$metrics,smsp__inst_executed.sum,launch__grid_size
	# Local-memory traffic: the spills a kernel actually runs (ptxas counts every path).
	metrics=$metrics,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum
	# The stall reasons, each in cycles a warp spends in it per issued
	# instruction: WarpStateStats in --csv keeps only their total (Warp
	# Cycles Per Issued Instruction) and the largest, in a rule's text.
	for stall in long_scoreboard short_scoreboard barrier wait math_pipe_throttle not_selected selected \
		lg_throttle mio_throttle no_instruction membar drain dispatch_stall branch_resolving; do
		metrics=$metrics,smsp__average_warps_issue_stalled_${stall}_per_issue_active.ratio
	done
	# KQUANT_PROFILE_SHAPES: ROWSxCOLS,... (KQUANT_PROFILE_SHAPE of each
	# run, ncu-SHAPE.csv); unset, one run at each test's own shape
	# (ncu.csv). The warp-state section adds its rules' advice.
	IFS=, read -r -a shapes <<<"${KQUANT_PROFILE_SHAPES:-}"
	[ ${#shapes[@]} -gt 0 ] || shapes=("")
	for shape in "${shapes[@]}"; do
		csv=$out/ncu${shape:+-$shape}.csv
		KQUANT_PROFILE=1 KQUANT_PROFILE_SHAPE=$shape ncu --clock-control none --metrics "$metrics" --section WarpStateStats --csv \
			/tmp/kq-suite/kernels.test -test.run 'Profile' -test.v >"$csv" 2>"${csv%.csv}.log"
		echo "ncu${shape:+ $shape}: rc=$? $(grep -c gpu__time_duration "$csv") kernels profiled" | tee -a "$out/summary.txt"
		pack
	done
	;;
esac
grep -h -- '--- FAIL' "$out"/*.log | head -40 | tee -a "$out/summary.txt"
pack
