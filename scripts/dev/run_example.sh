#!/usr/bin/env bash
# The main job: set up, build, and run an example training script headlessly,
# recorded into the default history ($LAZYSCOPE_HISTORY or the XDG data
# folder), ending with the run's summary. Extra arguments go to the script.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/dev/install_deps.sh
scripts/dev/build.sh >/dev/null
PRESET="${LAZYSCOPE_PRESET:-release}"
exec "build/$PRESET/bin/lazyscope" run scripts/examples/mnist_mlp.py "$@"
