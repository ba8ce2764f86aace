#!/bin/bash
# nvfp4_stage.sh OLD NEW DIR: stages the NVFP4 device code of two git
# revisions for the GPU old-against-new checks (nvfp4_colcheck,
# nvfp4_rowcheck), which build both into one binary: DIR/old and DIR/new
# get that revision's kernels/*.cuh, its nvfp4.cu up to the entry points
# (pre.cuh: the helpers without the kernels) and its commit (REV), and DIR
# the nvcc flags both sides build with (nvcc_flags.sh, gen-kernels.sh's).
# Run from the repository; the staged DIR needs no git (GPU machines have
# none).
set -e
OLD=${1:?OLD}; NEW=${2:?NEW}; D=${3:?DIR}
mkdir -p $D
for side in old new; do
	rev=$OLD; [ $side = new ] && rev=$NEW
	rm -rf $D/$side; mkdir -p $D/$side
	for f in $(git ls-tree --name-only $rev kernels/ | grep '\.cuh$'); do git show $rev:$f > $D/$side/$(basename $f); done
	git show $rev:kernels/nvfp4.cu | sed '/^\/\/ Kernels by input type/,$d' > $D/$side/pre.cuh
	git rev-parse $rev > $D/$side/REV
done
cp "$(dirname "$0")/lib/nvcc_flags.sh" $D/
