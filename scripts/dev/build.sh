#!/usr/bin/env bash
# Configures (once) and builds LazyScope with a CMake preset (default: release).
# Incremental: a second run with nothing changed takes a second or two.
set -euo pipefail
cd "$(dirname "$0")/../.."
PRESET="${LAZYSCOPE_PRESET:-release}"
if [ ! -f "build/$PRESET/build.ninja" ]; then
  cmake --preset "$PRESET" >/dev/null
fi
cmake --build --preset "$PRESET"
