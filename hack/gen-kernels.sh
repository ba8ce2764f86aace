#!/usr/bin/env bash
# Regenerates kernels/*.ptx from kernels/*.cu. Needs nvcc (CUDA >= 12.8), so
# it runs on a GPU machine; the PTX is committed and embedded by the Go
# package kernels, so builds elsewhere need no CUDA toolkit.
#
# Usage: hack/gen-kernels.sh [OUTDIR [SOURCE.cu...]]   (default: kernels/, every kernels/*.cu)
#
# A source that fails to compile does not stop the others (several people
# edit kernels at once on one tree); the script exits non-zero at the end.
#
# Each PTX starts with a stamp line "// kquant-source-sha256: <sha256 of the
# .cu file>"; kernels' unit test recomputes it and fails when a PTX is stale.
# PTX targets compute_90 (Hopper; the driver JIT-compiles it for newer GPUs).
# A kernel that needs an sm_100a-only instruction goes into a file named
# *_sm100a.cu, built for compute_100a instead.
#
# The flags keep IEEE float32 semantics, which the bit-exact contract
# (docs/quantization-formats.md) depends on: no flush to zero, correctly
# rounded division and square root, no FMA contraction.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-kernels}
shift || true
mkdir -p "$out"
sources=("$@")
[ ${#sources[@]} -gt 0 ] || sources=(kernels/*.cu)
failed=()
nvcc=${NVCC:-nvcc}
flags=(-ptx -std=c++17 -O3 -ftz=false -prec-div=true -prec-sqrt=true -fmad=false)
"$nvcc" --version | tail -n 2
for src in "${sources[@]}"; do
	base=$(basename "$src" .cu)
	arch=compute_90
	case "$base" in *_sm100a) arch=compute_100a ;; esac
	hash=$(sha256sum "$src" | cut -d' ' -f1)
	tmp=$(mktemp)
	if ! "$nvcc" "${flags[@]}" -arch="$arch" -o "$tmp" "$src"; then
		failed+=("$src")
		rm -f "$tmp"
		continue
	fi
	{ echo "// kquant-source-sha256: $hash"; cat "$tmp"; } >"$out/$base.ptx"
	rm -f "$tmp"
	# Assemble once to catch PTX the driver would reject, and show the
	# kernels' register and spill counts.
	if command -v ptxas >/dev/null && [ "$arch" = compute_90 ]; then
		ptxas -arch=sm_90 -v -o /dev/null "$out/$base.ptx" 2>&1 | grep -E 'Compiling|registers|spill' | sed 's/^ptxas info *: //' || true
	fi
	echo "generated $out/$base.ptx ($arch, source sha256 $hash)"
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "FAILED: ${failed[*]}" >&2
	exit 1
fi
