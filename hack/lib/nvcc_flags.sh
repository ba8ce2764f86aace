# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# shellcheck shell=bash
# nvcc_flags.sh: the one definition of the nvcc flags every build of
# kquant's device code uses (hack/gen-kernels.sh for the committed PTX, and
# any check that compiles the kernels' helpers on its own). They keep IEEE float32 semantics, which the
# bit-exact contract (docs/quantization-formats.md) depends on: no flush to
# zero, correctly rounded division and square root, no FMA contraction. A
# check built with other flags would compare other code than the kernels.
# shellcheck disable=SC2034 # read by the scripts that source this file
KQ_NVCC_IEEE=(-std=c++17 -O3 -ftz=false -prec-div=true -prec-sqrt=true -fmad=false)
