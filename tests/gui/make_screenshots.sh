#!/bin/sh
# Refreshes resources/screenshots from real recordings: records the example
# scripts (and one failing script) into a fresh history with the runner, then
# grabs every view in the light and dark colour scheme with make_screenshots.
#   tests/gui/make_screenshots.sh [BUILD_DIR]     (default build/release)
set -eu
build=${1:-build/release}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
history=$work/examples.sqlite
run() { "$build/bin/lazyscope" run --history "$history" --quiet "$@" >/dev/null 2>&1; }
# Ids follow recording order: 1 mnist_mlp ... 8 linear_regression, 9 bad-shape,
# 10 distributed_mlp with two worker processes.
for script in mnist_mlp recompile_demo recompile_fixed host_sync_demo host_sync_fixed \
              mnist_cnn char_transformer linear_regression; do
  run --tag example "scripts/examples/$script.py"
done
cat > "$work/bad_shape.py" <<'PY'
# A training script with a shape bug: its output shows the traceback.
import lazyscope
from lazyscope.core import lazy_model as lm
dev = lm.lazy_device()
x = lazyscope.ones(64, 784, device=dev)
w = lazyscope.ones(512, 10, device=dev)
for step in range(3):
    print(f"step {step}: forward")
    y = x @ w
    lm.mark_step()
PY
run --name bad-shape "$work/bad_shape.py" || true  # it fails on purpose
run --nproc-per-node 2 scripts/examples/distributed_mlp.py
QT_QPA_PLATFORM=offscreen "$build/tests/gui/make_screenshots" "$history" resources/screenshots \
  runs=2 overview=2 recompilations=2 timeline=4 charts=7 graphs=1 graphs+transformer=7 fallbacks=4 \
  metrics=7 output=9 kernels=6 compare=2,3 run-script=scripts/examples/mnist_mlp.py \
  timeline-ranks=10
