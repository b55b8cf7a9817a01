#!/usr/bin/env python3
"""Writes docs/pytorch_coverage.md from the code (lazyscope/_coverage.py and the
STATUS tables of lazyscope.compat.torch_xla).

Usage: LAZYSCOPE_BUILD_DIR=build/release /usr/bin/python3 docs/generate_pytorch_coverage.py [--check]
--check exits 1 (writing nothing) when the checked-in file differs from the generated text.
"""
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get("LAZYSCOPE_BUILD_DIR", ROOT / "build" / "release"))
sys.path.insert(0, str(BUILD / "python"))
TARGET = ROOT / "docs" / "pytorch_coverage.md"


def main(argv):
    from lazyscope import _coverage
    text = _coverage.markdown()
    if "--check" in argv:
        current = TARGET.read_text() if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET} is stale: run docs/generate_pytorch_coverage.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
