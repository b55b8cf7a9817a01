"""The PyTorch coverage table (docs/pytorch_coverage.md) is generated from the
code: every name it lists as supported or differing exists, every refused one
raises NotImplementedError naming itself and what to use instead, and the
checked-in file equals what the generator writes now."""
import importlib
import pathlib
import subprocess
import sys

import pytest

import lazyscope
from lazyscope import _coverage

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _root(path):
    return lazyscope.Tensor if path == "lazyscope.Tensor" else importlib.import_module(path)


ROWS = [(title, path, name, status, note) for title, path, table in _coverage.SECTIONS
        for name, (status, note) in table.items()]


@pytest.mark.parametrize("title,path,name,status,note", [r for r in ROWS if r[3] != _coverage.REFUSED],
                         ids=[f"{r[0]}.{r[2]}" for r in ROWS if r[3] != _coverage.REFUSED])
def test_every_listed_name_exists(title, path, name, status, note):
    assert _coverage.resolve(_root(path), name) is not None, f"{title}.{name} is listed as {status} but missing"
    assert status == _coverage.SUPPORTED or note, f"{title}.{name}: a difference must say what differs"


@pytest.mark.parametrize("title,path,name,status,note", [r for r in ROWS if r[3] == _coverage.REFUSED],
                         ids=[f"{r[0]}.{r[2]}" for r in ROWS if r[3] == _coverage.REFUSED])
def test_every_refused_name_says_what_to_use(title, path, name, status, note):
    fn = _coverage.resolve(_root(path), name)
    assert fn is not None, f"{title}.{name}: no refusal installed"
    call = getattr(lazyscope.ones(2), name) if path == "lazyscope.Tensor" else fn
    with pytest.raises(NotImplementedError, match=rf"{name}.*(not supported|no CUDA).*use "):
        call()
    assert note


def test_checked_in_table_is_current(build_dir):
    done = subprocess.run([sys.executable, str(ROOT / "docs" / "generate_pytorch_coverage.py"), "--check"],
                          env={"LAZYSCOPE_BUILD_DIR": str(build_dir), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_missing_name_fails_the_table(monkeypatch):
    # The check the table relies on: a listed name that disappears is found.
    monkeypatch.delattr(lazyscope, "einsum")
    assert _coverage.resolve(lazyscope, "einsum") is None


def test_torch_cuda_is_probed_not_crashed():
    assert lazyscope.cuda.is_available() is False and lazyscope.cuda.device_count() == 0
    with pytest.raises(NotImplementedError, match=r"torch.cuda.set_device is not supported by LazyScope"):
        lazyscope.cuda.set_device(0)
