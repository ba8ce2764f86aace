#!/bin/bash
# run.sh DIR (GPU machine; DIR from prepare.sh): builds the rowwise fast
# path of DIR/old and DIR/new into one binary and compares their bytes
# (codes, scales, swizzled scales) on random tensors; exits non-zero on a
# mismatch. ARCH (default sm_90) picks the target.
set -e
D=$(cd "${1:?DIR}" && pwd)
A=${ARCH:-sm_90}
cd $D
. ./nvcc_flags.sh
F="${KQ_NVCC_IEEE[*]} -arch=$A"
nvcc $F -DNS=old -Iold -c -o old.o tu.cu
nvcc $F -DNS=new -Inew -c -o new.o tu.cu
nvcc -arch=$A -O2 -o check main.cu old.o new.o
./check ${CASES:-400}
