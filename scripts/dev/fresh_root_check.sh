#!/usr/bin/env bash
# Runs the README's two commands (scripts/dev/run_example.sh, then
# scripts/dev/test_all.sh) in a truly fresh Debian 12 root: debootstrap
# bookworm (minbase: less than any real machine has) from the Debian mirror
# apt uses here, the repository cloned into it at HEAD (committed work only),
# then chroot with /proc, /sys and /dev mounted. For use before a change to
# dependencies lands: a green CI on a developer's machine cannot see a
# missing install step (issue 10).
#
# usage (root): scripts/dev/fresh_root_check.sh [--share-ccache] [--keep] [DIR]
#   DIR             where the root is made (default /var/tmp/lazyscope-fresh-root;
#                   emptied first)
#   --share-ccache  bind-mount this machine's ccache into the root so that the
#                   build takes minutes, not an hour; the packages, the
#                   compiler and every header still come fresh from the mirror
#                   (ccache hashes the compiler and the headers by content)
#   --keep          leave the root in place afterwards (it is removed otherwise)
# Slow and CPU-heavy (a full build and every test); prints the time of each
# phase and exits with the first failing command's code.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/../.." && pwd)"
ROOT_DIR=/var/tmp/lazyscope-fresh-root
SHARE_CCACHE=0
KEEP=0
for arg in "$@"; do
  case "$arg" in
    --share-ccache) SHARE_CCACHE=1 ;;
    --keep) KEEP=1 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "fresh_root_check: unknown option $arg" >&2; exit 2 ;;
    *) ROOT_DIR="$arg" ;;
  esac
done

if [ "$(id -u)" -ne 0 ]; then
  echo "fresh_root_check: needs root (debootstrap, mount, chroot)" >&2
  exit 2
fi

# The mirror apt already uses (deb822 or one-line sources), else Debian's own.
MIRROR="$(grep -h '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -1 || true)"
if [ -z "$MIRROR" ]; then
  MIRROR="$(grep -h '^deb ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}' | grep -v security | head -1 || true)"
fi
MIRROR="${MIRROR:-http://deb.debian.org/debian}"

COMMIT="$(git -C "$REPO" rev-parse HEAD)"
start_all=$(date +%s)
phase_start=$start_all
phase() {
  local now
  now=$(date +%s)
  echo "fresh_root_check: [$((now - start_all)) s] $*"
  phase_start=$now
}

unmount_all() {
  # Deepest first; a mount already gone is fine.
  for mounted in root/.cache/ccache dev/pts dev sys proc; do
    if mountpoint -q "$ROOT_DIR/$mounted" 2>/dev/null; then umount -l "$ROOT_DIR/$mounted" || true; fi
  done
}
cleanup() {
  unmount_all
  if [ "$KEEP" -eq 0 ] && [ -d "$ROOT_DIR" ]; then rm -rf --one-file-system "$ROOT_DIR"; fi
}
trap cleanup EXIT

if ! command -v debootstrap >/dev/null; then
  phase "installing debootstrap (Debian's package)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap
fi

unmount_all
rm -rf --one-file-system "$ROOT_DIR"
mkdir -p "$ROOT_DIR"
phase "debootstrap --variant=minbase bookworm $ROOT_DIR $MIRROR"
debootstrap --variant=minbase bookworm "$ROOT_DIR" "$MIRROR" >"$ROOT_DIR.debootstrap.log" 2>&1 || {
  tail -20 "$ROOT_DIR.debootstrap.log" >&2
  exit 1
}
phase "debootstrap done"

cp /etc/resolv.conf "$ROOT_DIR/etc/resolv.conf"
mount -t proc proc "$ROOT_DIR/proc"
mount -t sysfs sys "$ROOT_DIR/sys"
mount --bind /dev "$ROOT_DIR/dev"
mount --bind /dev/pts "$ROOT_DIR/dev/pts"

# Cloned outside the root's own tools (git is not in it yet); HEAD only.
mkdir -p "$ROOT_DIR/work"
git clone -q --no-hardlinks "$REPO" "$ROOT_DIR/work/lazyscope"
git -C "$ROOT_DIR/work/lazyscope" checkout -q --detach "$COMMIT"
phase "cloned $REPO at $COMMIT into $ROOT_DIR/work/lazyscope"

if [ "$SHARE_CCACHE" -eq 1 ]; then
  host_cache="$(ccache -k cache_dir 2>/dev/null || echo "$HOME/.cache/ccache")"
  mkdir -p "$ROOT_DIR/root/.cache/ccache" "$ROOT_DIR/root/.config/ccache" "$host_cache"
  mount --bind "$host_cache" "$ROOT_DIR/root/.cache/ccache"
  # The root's compiler is installed now (a new mtime): compare by content.
  printf 'base_dir = /work\nhash_dir = false\ncompiler_check = content\n' >"$ROOT_DIR/root/.config/ccache/ccache.conf"
fi

run_in_root() {
  chroot "$ROOT_DIR" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash -c "cd /work/lazyscope && $1"
}

phase "scripts/dev/run_example.sh"
run_in_root scripts/dev/run_example.sh
phase "run_example.sh passed; scripts/dev/test_all.sh"
run_in_root scripts/dev/test_all.sh
phase "test_all.sh passed: the README's two commands pass on a fresh Debian 12 root at $COMMIT"
