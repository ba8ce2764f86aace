#!/usr/bin/env bash
# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# Regenerates kernels/*.ptx.xz from kernels/*.cu, and the machine code
# assembled from that PTX (kernels/sass/SM/*.cubin.xz). Everything it writes
# is xz-compressed (xz -9e, no file name or time stored, so the same bytes
# every run): uncompressed, the PTX alone was over 30 MB of the checkout. Needs nvcc (CUDA >=
# 12.8), so it runs on a GPU machine; PTX and machine code are committed and
# embedded by the Go package kernels, so builds elsewhere need no CUDA
# toolkit.
#
# Usage: hack/gen-kernels.sh [OUTDIR [SOURCE.cu...]]   (default: kernels/, every kernels/*.cu)
# KQUANT_GEN_ARCH=compute_90 builds only that target (quicker, while working
# on one kernel).
#
# A source that fails to compile does not stop the others (several people
# edit kernels at once on one tree); the script exits non-zero at the end.
#
# Each decompressed PTX starts with a stamp line "// kquant-source-sha256: <sha256 of the
# .cu file followed by every kernels/*.cuh in name order>" (the headers the
# sources include), each without its licence header, which is no code; kernels' unit test recomputes it and fails when a PTX is
# stale.
# Every source is built twice: for compute_90 into OUTDIR/<name>.ptx.xz
# (Hopper; the driver JIT-compiles it for newer GPUs) and for compute_80
# into OUTDIR/ptx80/<name>.ptx.xz (Ampere and Ada: the same kernels with the
# FP8 conversions in software, kq_fp8_sw.cuh), which kernels.Load picks
# below compute capability 9.0. A kernel that needs an sm_100a-only
# instruction goes into a file named *_sm100a.cu, built for compute_100a
# only (PTX alone).
#
# The compute_90 PTX is also assembled by ptxas for each machine code target
# of KQUANT_GEN_SASS (default sm_90 sm_100 sm_120: Hopper, datacenter and
# consumer Blackwell) into OUTDIR/sass/SM/<name>.cubin.xz: the very PTX the
# driver would JIT-compile, assembled ahead, so that a fresh process loads
# machine code in milliseconds instead of JIT-compiling the PTX for over a
# minute (kernels.Load takes the cubin of the device's exact SM and falls
# back to the PTX). Each cubin is compressed behind the same stamp line as
# its PTX (kernels.Cubin strips it). KQUANT_GEN_SASS= (empty) builds none.
#
# The flags (hack/lib/nvcc_flags.sh) keep IEEE float32 semantics, which
# the bit-exact contract (docs/quantization-formats.md) depends on: no flush
# to zero, correctly rounded division and square root, no FMA contraction.
set -euo pipefail
# The stamp hashes the headers in byte order of their names, as Go's
# filepath.Glob lists them for the stamp test; a UTF-8 locale's collation
# puts quantize_mxfp8_rowb.cuh before quantize_mxfp8_row.cuh, and a hash
# taken in that order matches no checkout.
export LC_ALL=C
cd "$(dirname "$0")/.."
out=${1:-kernels}
shift || true
sass_targets=${KQUANT_GEN_SASS-sm_90 sm_100 sm_120}
mkdir -p "$out" "$out/ptx80"
for sm in $sass_targets; do mkdir -p "$out/sass/$sm"; done
sources=("$@")
[ ${#sources[@]} -gt 0 ] || sources=(kernels/*.cu)
nvcc=${NVCC:-nvcc}
# shellcheck source=lib/nvcc_flags.sh
. hack/lib/nvcc_flags.sh
flags=(-ptx "${KQ_NVCC_IEEE[@]}")
"$nvcc" --version | tail -n 2
headers=(kernels/*.cuh)
[ -e "${headers[0]}" ] || headers=()
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# without_licence FILE: FILE's text without the licence header that opens it
# (its first three lines, kernels/stamp_test.go's licenceHeader).
licence_header=$'// Copyright 2026 The kquant Authors.\n// SPDX-License-Identifier: Apache-2.0'
without_licence() {
	if [ "$(head -n 3 "$1")" = "$licence_header" ]; then tail -n +4 "$1"; else cat "$1"; fi
}

# build SOURCE ARCH DEST SM [SASS...]: one PTX, and its cubin for each SASS
# target. Each (source, arch) pair is its own nvcc process, run in parallel
# (a serial build of every pair took about 5 minutes of a device call), and
# so is each cubin; the logs are printed in order at the end.
build() {
	local src=$1 arch=$2 dest=$3 sm=$4 hash tmp
	shift 4
	local sass=("$@")
	hash=$(for f in "$src" "${headers[@]}"; do without_licence "$f"; done | sha256sum | cut -d' ' -f1)
	tmp=$(mktemp)
	if ! "$nvcc" "${flags[@]}" -arch="$arch" -o "$tmp" "$src"; then
		rm -f "$tmp"
		echo "FAILED: $src ($arch)"
		return 1
	fi
	{ echo "// kquant-source-sha256: $hash"; cat "$tmp"; } >"$tmp.ptx"
	rm -f "$tmp"
	# Assemble once to catch PTX the driver would reject, and show the
	# kernels' register and spill counts (the first SASS target's cubin is
	# that assembly).
	if command -v ptxas >/dev/null && [ "$sm" != - ] && [ ${#sass[@]} -eq 0 ]; then
		ptxas -arch="$sm" -v -o /dev/null "$tmp.ptx" 2>&1 | grep -E 'Compiling|registers|spill|error' | sed 's/^ptxas info *: //' || true
	fi
	local base cubin pids=() failed=0 i=0
	base=$(basename "$src" .cu)
	for cubin in "${sass[@]}"; do
		assemble "$tmp.ptx" "$cubin" "$out/sass/$cubin/$base.cubin.xz" "$hash" "$([ $i -eq 0 ] && echo -v)" >"$tmp.$cubin.log" 2>&1 &
		pids+=($!)
		i=$((i + 1))
	done
	for i in "${!pids[@]}"; do
		wait "${pids[$i]}" || failed=1
		cat "$tmp.${sass[$i]}.log"
		rm -f "$tmp.${sass[$i]}.log"
	done
	compress <"$tmp.ptx" >"$dest"
	rm -f "$tmp.ptx"
	echo "generated $dest ($arch, source sha256 $hash)"
	if [ $failed -ne 0 ]; then
		echo "FAILED: $src (machine code)"
		return 1
	fi
}

# compress: stdin xz-compressed to stdout, as kernels.Load reads it (one
# thread, so one block: the same bytes whatever the machine's cores).
compress() { xz -9e -T1 --check=crc64 -c; }

# assemble PTX SM DEST HASH [-v]: the cubin of PTX for SM, compressed behind
# the stamp line. -v prints the kernels' registers and spills.
assemble() {
	local ptx=$1 sm=$2 dest=$3 hash=$4 verbose=${5:-} cubin
	cubin=$(mktemp)
	if ! ptxas -arch="$sm" ${verbose:+-v} -o "$cubin" "$ptx" >"$cubin.log" 2>&1; then
		cat "$cubin.log"
		rm -f "$cubin" "$cubin.log"
		echo "ptxas failed: $ptx for $sm"
		return 1
	fi
	grep -E 'Compiling|registers|spill|error' "$cubin.log" | sed 's/^ptxas info *: //' || true
	{ echo "// kquant-source-sha256: $hash"; cat "$cubin"; } | compress >"$dest"
	rm -f "$cubin" "$cubin.log"
	echo "generated $dest ($sm machine code, $(stat -c %s "$dest") bytes compressed)"
}

jobs_max=${KQUANT_GEN_JOBS:-$(nproc)}
n=0
for src in "${sources[@]}"; do
	base=$(basename "$src" .cu)
	targets=("compute_90 $out/$base.ptx.xz sm_90 $sass_targets" "compute_80 $out/ptx80/$base.ptx.xz sm_80")
	case "$base" in *_sm100a) targets=("compute_100a $out/$base.ptx.xz -") ;; esac
	for t in "${targets[@]}"; do
		read -r arch dest sm sass <<<"$t"
		[ -z "${KQUANT_GEN_ARCH:-}" ] || [ "$arch" = "$KQUANT_GEN_ARCH" ] || continue
		n=$((n + 1))
		# shellcheck disable=SC2086 # sass: one word per target
		build "$src" "$arch" "$dest" "$sm" $sass >"$logs/$(printf %03d $n)" 2>&1 &
		while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
	done
done
wait
cat "$logs"/*
failed=()
mapfile -t failed < <(grep -h '^FAILED: ' "$logs"/* | sed 's/^FAILED: //')
if [ ${#failed[@]} -gt 0 ]; then
	echo "FAILED: ${failed[*]}" >&2
	exit 1
fi
