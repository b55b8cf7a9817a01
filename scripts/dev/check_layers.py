#!/usr/bin/python3
"""Fails when an #include points up the layer table of ARCHITECTURE.md
(issue 10 section 5: the document said engine layers point one way while
ir included backend, and tensor, executor and autograd included each other).

The table between the `<!-- layer-table -->` markers of ARCHITECTURE.md is
the one source: each row names a layer, the files it holds (path prefixes,
or `<...>` patterns of system headers such as Qt's), and the layers it sits
on. A file may include its own layer, the layers its row sits on, and
whatever those may include (transitively). Every `#include "..."` and
`#include <...>` of every C++ file under engine/, storage/, gui/, runner/ and
proto/ is resolved to a file (next to the includer, then under each source
root; `lazyscope/*.pb.h` is generated from proto/), mapped to its layer by
the longest matching prefix, and checked. The repository rules follow from
the rows: the engine sits on nothing of storage, gui or Qt; storage on
nothing of the engine; the GUI on storage and Qt, never the engine.

usage: scripts/dev/check_layers.py [--root DIR]   (default: this repository)
exit 0: every include points down; 1: some do not (each named as
FILE:LINE with the include and both layers), or a file or quoted include
belongs to no layer; 2: the table itself cannot be read.
"""
import argparse
import fnmatch
import os
import re
import sys

SCANNED = ("engine", "storage", "gui", "runner", "proto")
# Where a quoted include is looked up after the includer's own folder: the
# include directories the CMake targets declare.
INCLUDE_ROOTS = ("engine", "engine/python", "storage", "gui", "runner", "proto")
SOURCE_EXTENSIONS = (".h", ".hpp", ".cpp", ".cc", ".inc")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


class TableError(Exception):
    pass


def read_table(architecture_md):
    """Rows of the layer table: [(name, [file patterns], [layers it sits on])]."""
    try:
        text = open(architecture_md, encoding="utf-8").read()
    except OSError as e:
        raise TableError(f"cannot read the layer table: {e}")
    m = re.search(r"<!-- layer-table -->(.*?)<!-- /layer-table -->", text, re.S)
    if not m:
        raise TableError(f"{architecture_md}: no <!-- layer-table --> ... <!-- /layer-table --> section")
    rows = []
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue  # header, separator, prose
        name = cells[0].strip("`")
        files = re.findall(r"`([^`]+)`", cells[1])
        below = re.findall(r"`([^`]+)`", cells[2])
        if not files:
            raise TableError(f"{architecture_md}: layer {name} names no files")
        rows.append((name, files, below))
    names = {r[0] for r in rows}
    for name, _, below in rows:
        for b in below:
            if b not in names:
                raise TableError(f"{architecture_md}: layer {name} sits on {b}, which is not a layer of the table")
    if not rows:
        raise TableError(f"{architecture_md}: the layer table has no rows")
    return rows


def allowed_closure(rows):
    """For each layer, the layers it may include: itself and, transitively, what it sits on."""
    sits_on = {name: below for name, _, below in rows}
    allowed = {}
    for name in sits_on:
        seen, todo = {name}, [name]
        while todo:
            for b in sits_on[todo.pop()]:
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
        allowed[name] = seen
    return allowed


class Layers:
    def __init__(self, rows):
        self.prefixes = []  # (path prefix, layer), longest first
        self.system = []  # (glob of a <...> include, layer)
        for name, files, _ in rows:
            for f in files:
                if f.startswith("<") and f.endswith(">"):
                    self.system.append((f[1:-1], name))
                else:
                    self.prefixes.append((f, name))
        self.prefixes.sort(key=lambda p: -len(p[0]))

    def of_path(self, rel):
        for prefix, name in self.prefixes:
            if rel == prefix or (prefix.endswith("/") and rel.startswith(prefix)):
                return name
        return None

    def of_system(self, header):
        for pattern, name in self.system:
            if fnmatch.fnmatchcase(header, pattern):
                return name
        return None


def resolve(root, includer_rel, target):
    """The repository-relative file a quoted include names, or None."""
    if target.startswith("lazyscope/") and target.endswith(".pb.h"):
        return "proto/" + target[: -len(".pb.h")] + ".proto"  # generated from it
    for base in (os.path.dirname(includer_rel),) + INCLUDE_ROOTS:
        rel = os.path.normpath(os.path.join(base, target))
        if os.path.isfile(os.path.join(root, rel)):
            return rel
    return None


def source_files(root):
    for top in SCANNED:
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
            for f in sorted(files):
                if f.endswith(SOURCE_EXTENSIONS):
                    yield os.path.relpath(os.path.join(folder, f), root)


def check(root):
    rows = read_table(os.path.join(root, "ARCHITECTURE.md"))
    layers = Layers(rows)
    allowed = allowed_closure(rows)
    problems = []
    for rel in source_files(root):
        layer = layers.of_path(rel)
        if layer is None:
            problems.append(f"{rel}: belongs to no layer of ARCHITECTURE.md's layer table (add its folder to a row)")
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                quoted, target = m.group(1) == '"', m.group(2)
                if quoted:
                    resolved = resolve(root, rel, target)
                    if resolved is None:
                        problems.append(f'{rel}:{lineno}: #include "{target}" names no file of the repository')
                        continue
                    to = layers.of_path(resolved)
                    if to is None:
                        problems.append(f'{rel}:{lineno}: #include "{target}" ({resolved}) belongs to no layer')
                        continue
                    shown = f'"{target}"'
                else:
                    to = layers.of_system(target)
                    if to is None:
                        continue  # the standard library and the libraries the build links
                    shown = f"<{target}>"
                if to not in allowed[layer]:
                    may = ", ".join(sorted(allowed[layer] - {layer})) or "nothing"
                    problems.append(f"{rel}:{lineno}: #include {shown} points up or across the layers: "
                                    f"{layer} may not include {to} (it may include {may})")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        help="the repository to check (default: this one)")
    args = parser.parse_args()
    try:
        problems = check(os.path.abspath(args.root))
    except TableError as e:
        print(f"check_layers: {e}", file=sys.stderr)
        return 2
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_layers: {len(problems)} include(s) break ARCHITECTURE.md's layer table", file=sys.stderr)
        return 1
    print("check_layers: every include points down the layer table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
