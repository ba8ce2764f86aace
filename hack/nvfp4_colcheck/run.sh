#!/bin/bash
# run.sh OLD NEW: builds the columnwise RHT pieces of kernels/ at git
# revisions OLD (the session-14 API, 0a42cd6, or session 15's, 9186a58 and
# later) and NEW (session 15's API) into one binary and compares them on
# the GPU (main.cu: the SR code over every float32, kq_q16r (SR, RN) and
# kq_bkey16 over random blocks, whole TE-mask tile bodies, RHT + SR and
# RHT + RN, old against new and new against the reference path for every
# block (kq_col_nan), over random tiles with NaNs, specials and tensor
# scales from tiny to huge). GPU machine, from the repository root; exits
# non-zero on a mismatch.
set -e
OLD=${1:-0a42cd6}
NEW=${2:-HEAD}
D=$(mktemp -d)
HERE=$(dirname "$0")
"$HERE/../nvfp4_stage.sh" "$OLD" "$NEW" "$D"
cp $HERE/tu.cu $HERE/main.cu $D/
cd $D
. ./nvcc_flags.sh
F="${KQ_NVCC_IEEE[*]} -arch=sm_90"
# A side with session 15's API (kq_tab14, KQ_RK: 9186a58 and later)
# builds with NEW; the new side must have it (its reference bodies).
api() { grep -q kq_tab14 $1/nvfp4_rhtcol.cuh && echo -DNEW; }
[ -n "$(api new)" ] || { echo "NEW ($NEW) lacks session 15's API"; exit 2; }
nvcc $F -DNS=old $(api old) -Iold -c -o old.o tu.cu
nvcc $F -DNS=new -DNEW -Inew -c -o new.o tu.cu
nvcc -arch=sm_90 -O2 -o check main.cu old.o new.o
./check
