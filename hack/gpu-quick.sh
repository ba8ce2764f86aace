#!/usr/bin/env bash
# A quick device round for kernel work: regenerates only the named kernel
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
set -uo pipefail
cd "$(dirname "$0")/.."
dir=$1 out=$2
shift 2
work=/tmp/kq-quick
rm -rf "$work"
mkdir -p "$work/ptx/ptx80" "$out"
for b in kernels gpu; do
	xz -dc "$dir/$b.test.xz" >"$work/$b.test" && chmod +x "$work/$b.test"
done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/summary.txt"
cp kernels/*.ptx "$work/ptx/"
cp kernels/ptx80/*.ptx.gz "$work/ptx/ptx80/"
if [ $# -gt 0 ]; then
	KQUANT_GEN_ARCH=compute_90 hack/gen-kernels.sh "$work/ptx" "$@" >"$out/gen.log" 2>&1 ||
		echo "PTX generation FAILED (gen.log)" | tee -a "$out/summary.txt"
	grep -E 'registers|spill' "$out/gen.log" | grep -v ' 0 bytes spill' | grep spill | head -20 >>"$out/summary.txt"
fi
export KQUANT_PTX_DIR=$work/ptx KQUANT_EXPECT_GPU=1
t() { # binary log timeout regex [env...]
	local bin=$1 log=$2 to=$3 re=$4
	shift 4
	env "$@" "$work/$bin" -test.v -test.count=1 -test.timeout="$to" -test.run "$re" >"$out/$log.log" 2>&1
	echo "$log: rc=$? pass=$(grep -c -- '--- PASS' "$out/$log.log") fail=$(grep -c -- '--- FAIL' "$out/$log.log")" | tee -a "$out/summary.txt"
	grep -h -- '--- FAIL' "$out/$log.log" | head -20 >>"$out/summary.txt"
}
[ -z "${KQ_TESTS:-}" ] || t kernels.test kernels 4m "$KQ_TESTS" KQUANT_BIG=0
[ -z "${KQ_GPU_TESTS:-}" ] || t gpu.test gpu 4m "$KQ_GPU_TESTS" KQUANT_BIG=0
[ -z "${KQ_BENCH:-}" ] || t kernels.test kernels-bench 4m "$KQ_BENCH" KQUANT_BENCH=1
[ -z "${KQ_GPU_BENCH:-}" ] || t gpu.test gpu-bench 4m "$KQ_GPU_BENCH" KQUANT_BENCH=1
if [ -n "${KQ_PROFILE:-}" ]; then
	sections=()
	for s in SpeedOfLight Occupancy LaunchStats WarpStateStats ComputeWorkloadAnalysis MemoryWorkloadAnalysis; do sections+=(--section "$s"); done
	KQUANT_PROFILE=1 timeout 240 ncu --clock-control none "${sections[@]}" -k "regex:$KQ_PROFILE" \
		"$work/kernels.test" -test.run "${KQ_PROFILE_RUN:-Profile}" -test.v >"$out/ncu.txt" 2>&1
	echo "ncu: rc=$? $(grep -c 'Duration' "$out/ncu.txt") kernels profiled" | tee -a "$out/summary.txt"
fi
