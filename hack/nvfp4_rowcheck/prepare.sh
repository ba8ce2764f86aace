#!/bin/bash
# prepare.sh OLD NEW DIR: stages hack/nvfp4_rowcheck for a GPU machine
# without git: the two revisions' device code (hack/nvfp4_stage.sh) and
# the driver (tu.cu, main.cu, run.sh) in DIR. Then, on the
# GPU machine: bash DIR/run.sh DIR. Run from the repository.
set -e
OLD=${1:?OLD}; NEW=${2:?NEW}; D=${3:?DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
"$HERE/../nvfp4_stage.sh" "$OLD" "$NEW" "$D"
cp $HERE/tu.cu $HERE/main.cu $HERE/run.sh $D/
echo "staged $OLD (old) and $NEW (new) in $D; on the GPU: bash $D/run.sh $D"
