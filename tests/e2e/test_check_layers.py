"""scripts/dev/check_layers.py, as CI runs it (issue 10 section 5): every
#include of engine/, storage/, gui/, runner/ and proto/ points down the layer
table of ARCHITECTURE.md. Each test copies the sources and the table into a
temporary folder, injects one bad include, and expects the checker to fail
naming the file, the line and the include."""
import shutil
import subprocess

import pytest

TREES = ("engine", "storage", "gui", "runner", "proto")


def run_check(repo_root, root):
    return subprocess.run(["/usr/bin/python3", str(repo_root / "scripts/dev/check_layers.py"), "--root", str(root)],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def tree(repo_root, tmp_path):
    for top in TREES:
        shutil.copytree(repo_root / top, tmp_path / top,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so"))
    shutil.copy(repo_root / "ARCHITECTURE.md", tmp_path / "ARCHITECTURE.md")
    return tmp_path


def inject(path, include):
    """Adds `include` after the file's first #include; returns its line number."""
    lines = path.read_text().split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("#include")) + 1
    lines.insert(at, include)
    path.write_text("\n".join(lines))
    return at + 1


def test_the_repository_passes(repo_root):
    result = run_check(repo_root, repo_root)
    assert result.returncode == 0, result.stderr
    assert "every include points down" in result.stdout


@pytest.mark.parametrize("file, include, layers", [
    # An engine layer including one above it (issue 10: ir included backend).
    ("engine/ir/node.h", '#include "backend/backend.h"', "engine/ir may not include engine/backend"),
    ("engine/tensor/tensor.cpp", '#include "executor/graph_executor.h"',
     "engine/tensor may not include engine/executor"),
    ("engine/tensor/ops.cpp", '#include "autograd/autograd.h"', "engine/tensor may not include engine/autograd"),
    # The repository rules: the engine knows no storage and no Qt; storage
    # and the GUI know no engine.
    ("engine/executor/graph_executor.cpp", '#include "db/schema.h"', "engine/executor may not include storage/db"),
    ("engine/core/error.h", "#include <QString>", "engine/core may not include qt"),
    ("storage/recorder/recorder.cpp", '#include "tensor/tensor.h"', "storage/recorder may not include engine/tensor"),
    ("gui/app/main.cpp", '#include "executor/graph_executor.h"', "gui may not include engine/executor"),
    ("storage/db/schema.cpp", "#include <QtCore/QString>", "storage/db may not include qt"),
])
def test_an_include_that_points_up_is_named(repo_root, tree, file, include, layers):
    assert run_check(repo_root, tree).returncode == 0
    line = inject(tree / file, include)
    result = run_check(repo_root, tree)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{file}:{line}: {include} points up or across the layers: {layers}" in result.stderr, result.stderr
    assert "1 include(s) break" in result.stderr


def test_a_folder_outside_the_table_and_an_unknown_include_are_named(repo_root, tree):
    (tree / "engine/newlayer").mkdir()
    (tree / "engine/newlayer/thing.h").write_text("#pragma once\n")
    line = inject(tree / "engine/ir/attrs.h", '#include "ir/no_such_header.h"')
    result = run_check(repo_root, tree)
    assert result.returncode == 1
    assert "engine/newlayer/thing.h: belongs to no layer of ARCHITECTURE.md's layer table" in result.stderr
    assert f'engine/ir/attrs.h:{line}: #include "ir/no_such_header.h" names no file' in result.stderr


def test_a_missing_table_is_an_error_of_its_own(repo_root, tree):
    (tree / "ARCHITECTURE.md").write_text("# no table here\n")
    result = run_check(repo_root, tree)
    assert result.returncode == 2
    assert "no <!-- layer-table -->" in result.stderr
