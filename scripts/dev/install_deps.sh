#!/usr/bin/env bash
# Installs every Debian package LazyScope needs to build, test and run.
# Idempotent: when everything is present it only checks (well under a second).
# scripts/dev/check_deps.py (run by test_all.sh after the build) fails when the
# build used a package that this list, with what it depends on, does not install.
set -euo pipefail

PACKAGES=(
  # toolchain
  g++ cmake ninja-build ccache pkg-config git
  # engine
  libopenblas-dev libdnnl-dev libprotobuf-dev protobuf-compiler
  # Python front end: Debian's own interpreter with NumPy and pytest
  python3 python3-dev python3-numpy python3-pytest pybind11-dev
  # storage
  libsqlite3-dev
  # GUI (Qt 6 Widgets, Charts, SVG) and its offscreen tests
  qt6-base-dev qt6-charts-dev libqt6opengl6-dev qt6-svg-dev libgl-dev fonts-dejavu-core
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev desktop-file-utils
  # multi-process collectives (engine/distributed)
  libgloo-dev
  # the house C++ format, checked by test_all.sh (scripts/dev/format.sh --check)
  clang-format
)

# `install_deps.sh --list`: the packages, one a line, for scripts/dev/check_deps.py.
if [ "${1:-}" = "--list" ]; then
  printf '%s\n' "${PACKAGES[@]}"
  exit 0
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "lazyscope: installing ${#missing[@]} missing package(s): ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
