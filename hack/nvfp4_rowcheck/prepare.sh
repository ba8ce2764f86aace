#!/bin/bash
# prepare.sh OLD NEW DIR: stages hack/nvfp4_rowcheck for a GPU machine
# without git: DIR/old and DIR/new get kernels/*.cuh of revisions OLD and
# NEW and their nvfp4.cu up to its kernels (pre.cuh: the helpers without
# the entry points), DIR the driver (tu.cu, main.cu, run.sh). Then, on the
# GPU machine: bash DIR/run.sh DIR. Run from the repository.
set -e
OLD=${1:?OLD}; NEW=${2:?NEW}; D=${3:?DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p $D
for side in old new; do
	rev=$OLD; [ $side = new ] && rev=$NEW
	rm -rf $D/$side; mkdir -p $D/$side
	for f in $(git ls-tree --name-only $rev kernels/ | grep '\.cuh$'); do git show $rev:$f > $D/$side/$(basename $f); done
	git show $rev:kernels/nvfp4.cu | sed '/^\/\/ Kernels by input type/,$d' > $D/$side/pre.cuh
	git rev-parse $rev > $D/$side/REV
done
cp $HERE/tu.cu $HERE/main.cu $HERE/run.sh $D/
echo "staged $OLD (old) and $NEW (new) in $D; on the GPU: bash $D/run.sh $D"
