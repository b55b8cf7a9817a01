"""Shared pytest set-up: find the build tree and put its Python package first."""
import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get("LAZYSCOPE_BUILD_DIR", ROOT / "build" / "release"))
sys.path.insert(0, str(BUILD / "python"))


@pytest.fixture
def build_dir():
    return BUILD


@pytest.fixture
def repo_root():
    return ROOT
