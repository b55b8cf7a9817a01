#!/usr/bin/env bash
# Formats the C++ sources with the house style (.clang-format at the root).
#   scripts/dev/format.sh           rewrite every file that differs, in place
#   scripts/dev/format.sh --check   change nothing: list each file that would
#                                   change with its changed-line count and the
#                                   total; exit 1 if any would change
#   scripts/dev/format.sh [--check] FILE...   only these files
# Files: what git tracks under engine/ storage/ gui/ runner/ proto/ tests/
# benchmarks/ (*.h, *.hpp, *.cpp, *.cc, *.inc). Needs Debian's clang-format.
set -euo pipefail
cd "$(dirname "$0")/../.."
check=0
if [[ "${1:-}" == "--check" ]]; then
  check=1
  shift
fi
if ! command -v clang-format >/dev/null; then
  echo "format.sh: clang-format is not installed (apt-get install -y --no-install-recommends clang-format)" >&2
  exit 2
fi
if [[ $# -gt 0 ]]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files -- engine storage gui runner proto tests benchmarks |
                       grep -E '\.(h|hpp|cpp|cc|inc)$')
fi
if [[ $check -eq 0 ]]; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 16 -P "$(nproc)" clang-format -i --style="file:$PWD/.clang-format"
  exit 0
fi
# One line per file that would change: "<changed lines> <file>".
changed=$(printf '%s\0' "${files[@]}" | xargs -0 -n 1 -P "$(nproc)" sh -c \
  'n=$(clang-format --style="file:$0" "$1" | diff "$1" - | grep -c "^<" || true); [ "$n" -gt 0 ] && echo "$n $1" || true' "$PWD/.clang-format" |
  sort -k2)
if [[ -z "$changed" ]]; then
  echo "format.sh: all ${#files[@]} files follow .clang-format"
  exit 0
fi
echo "$changed"
echo "$changed" | awk -v total="${#files[@]}" \
  '{lines += $1} END {printf "format.sh: %d lines in %d of %d files differ from .clang-format\n", lines, NR, total}'
exit 1
