#!/usr/bin/env bash
# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# A short GPU run for kernel work: regenerates only the named kernel
# sources (compute_90, in parallel), loads them beside the committed PTX of
# the others, and runs the chosen kernels.test / gpu.test tests, benchmarks
# and ncu sections. Logs go straight into OUT, one small text file each.
# hack/gpu-run.sh remains the full suite; this is for iterating on one
# kernel family within a short device call.
#
# Usage: hack/gpu-quick.sh DIR OUT [kernels/SOURCE.cu ...]
#   DIR   the bundle of hack/gpu-bundle.sh (only kernels.test and gpu.test are used)
# Environment (each optional; an unset one skips its stage):
#   KQ_TESTS      -test.run regex for kernels.test (bit-exactness; KQUANT_BIG=0)
#   KQ_GPU_TESTS  -test.run regex for gpu.test (bit-exactness through the engine)
#   KQ_BENCH      -test.run regex for kernels.test with KQUANT_BENCH=1
#   KQ_GPU_BENCH  -test.run regex for gpu.test with KQUANT_BENCH=1 (e.g. 'TestBenchmarkUsage$')
#   KQ_PROFILE    ncu kernel-name regex; profiles kernels.test -test.run Profile
#                 (KQUANT_PROFILE=1) with the SpeedOfLight, Occupancy,
#                 LaunchStats, WarpStateStats, ComputeWorkloadAnalysis and
#                 MemoryWorkloadAnalysis sections
#   KQ_PROFILE_RUN -test.run regex for the profiled tests (default 'Profile')
#   KQ_AB         an A/B of kernel variants that give the same bytes: the
#                 variants' environment settings, space-separated, one
#                 NAME=VALUE each (NAME= for unset), e.g. 'KQUANT_NVFP4_2D=
#                 KQUANT_NVFP4_2D=one'. The test stages then run once under
#                 each variant, the benchmark stages KQ_AB_ROUNDS times
#                 (default 2) alternating between them, and the ncu stage
#                 once under each (a variant's kernels may be named apart).
#                 Each run has its own log (STAGE-vN.log, STAGE-rR-vN.log);
#                 they go into OUT/ab.tgz, since a device call returns at
#                 most 8 files, and the benchmark tables' rows, tagged with
#                 the variant, into summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
dir=$1 out=$2
shift 2
work=/tmp/kq-quick
rm -rf "$work"
mkdir -p "$work/ptx/ptx80" "$out"
for b in kernels gpu; do
	xz -dc "$dir/$b.test.xz" >"$work/$b.test" && chmod +x "$work/$b.test"
done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/summary.txt"
cp kernels/*.ptx.xz "$work/ptx/"
cp kernels/ptx80/*.ptx.xz "$work/ptx/ptx80/"
cp -r kernels/sass "$work/ptx/"
if [ $# -gt 0 ]; then
	KQUANT_GEN_ARCH=compute_90 hack/gen-kernels.sh "$work/ptx" "$@" >"$out/gen.log" 2>&1 ||
		echo "PTX generation FAILED (gen.log)" | tee -a "$out/summary.txt"
	grep -E 'registers|spill' "$out/gen.log" | grep -v ' 0 bytes spill' | grep spill | head -20 >>"$out/summary.txt"
fi
export KQUANT_PTX_DIR=$work/ptx KQUANT_EXPECT_GPU=1
# The variants: KQ_AB's settings, or one empty setting (the environment as
# it is). Without KQ_AB each log goes straight into OUT; with it into
# $logs, packed into OUT/ab.tgz after every run, so that a call cut short
# still returns the finished runs.
read -r -a variants <<<"${KQ_AB:-}"
ab=${#variants[@]}
[ "$ab" -gt 0 ] || variants=("")
logs=$out
[ "$ab" -eq 0 ] || { logs=$work/ab && mkdir -p "$logs"; }
pack() { [ "$ab" -eq 0 ] || tar czf "$out/ab.tgz" -C "$logs" .; }
t() { # binary log timeout regex [env...]
	local bin=$1 log=$2 to=$3 re=$4
	shift 4
	env "$@" "$work/$bin" -test.v -test.count=1 -test.timeout="$to" -test.run "$re" >"$logs/$log.log" 2>&1
	echo "$log: rc=$? pass=$(grep -c -- '--- PASS' "$logs/$log.log") fail=$(grep -c -- '--- FAIL' "$logs/$log.log")${variant:+ ($variant)}" | tee -a "$out/summary.txt"
	grep -h -- '--- FAIL' "$logs/$log.log" | head -20 >>"$out/summary.txt"
	pack
}
# each STAGE: STAGE under every variant: $variant its setting, $tag its
# logs' suffix (-vN; empty without KQ_AB).
variant='' tag='' round=''
each() {
	local i
	for i in "${!variants[@]}"; do
		variant=${variants[$i]} tag=
		[ "$ab" -eq 0 ] || tag=-v$i
		"$@"
	done
}
# rounds STAGE: each STAGE, KQ_AB_ROUNDS times (default 2; once without
# KQ_AB), $round the logs' suffix (-rR; empty without KQ_AB).
rounds() {
	local r n=1
	[ "$ab" -eq 0 ] || n=${KQ_AB_ROUNDS:-2}
	for r in $(seq "$n"); do
		round=
		[ "$ab" -eq 0 ] || round=-r$r
		each "$@"
	done
}
# bench BINARY LOG REGEX: a benchmark run; under KQ_AB its table's rows go
# into the summary, tagged with the round and the variant.
bench() {
	local log=$2$round$tag
	t "$1" "$log" 4m "$3" KQUANT_BENCH=1 ${variant:+"$variant"}
	[ "$ab" -eq 0 ] || grep -E '^[0-9]+x[0-9]+ ' "$logs/$log.log" | sed "s|^|${round#-} $variant: |" >>"$out/summary.txt"
}
kernels_tests() { t kernels.test "kernels$tag" 4m "$KQ_TESTS" KQUANT_BIG=0 ${variant:+"$variant"}; }
gpu_tests() { t gpu.test "gpu$tag" 4m "$KQ_GPU_TESTS" KQUANT_BIG=0 ${variant:+"$variant"}; }
kernels_bench() { bench kernels.test kernels-bench "$KQ_BENCH"; }
gpu_bench() { bench gpu.test gpu-bench "$KQ_GPU_BENCH"; }
profile() {
	local sections=() s
	for s in SpeedOfLight Occupancy LaunchStats WarpStateStats ComputeWorkloadAnalysis MemoryWorkloadAnalysis; do sections+=(--section "$s"); done
	local log=$out/ncu.txt
	[ "$ab" -eq 0 ] || log=$logs/ncu$tag.txt
	env KQUANT_PROFILE=1 ${variant:+"$variant"} timeout 240 ncu --clock-control none "${sections[@]}" -k "regex:$KQ_PROFILE" \
		"$work/kernels.test" -test.run "${KQ_PROFILE_RUN:-Profile}" -test.v >"$log" 2>&1
	echo "ncu: rc=$? $(grep -c 'Duration' "$log") kernels profiled${variant:+ ($variant)}" | tee -a "$out/summary.txt"
	pack
}
[ -z "${KQ_TESTS:-}" ] || each kernels_tests
[ -z "${KQ_GPU_TESTS:-}" ] || each gpu_tests
[ -z "${KQ_BENCH:-}" ] || rounds kernels_bench
[ -z "${KQ_GPU_BENCH:-}" ] || rounds gpu_bench
[ -z "${KQ_PROFILE:-}" ] || each profile
