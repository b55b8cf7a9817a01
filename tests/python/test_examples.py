"""The example scripts run to completion (as plain Python, on the build's package)."""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "scripts" / "examples"
CASES = [("mnist_mlp.py", [], {}), ("mnist_cnn.py", ["--steps", "3"], {}), ("recompile_demo.py", [], {}),
         ("recompile_fixed.py", [], {}), ("host_sync_demo.py", [], {}), ("host_sync_fixed.py", [], {}),
         ("bf16.py", [], {}), ("char_transformer.py", ["--steps", "3"], {}),
         ("data_parallel.py", [], {"LAZYSCOPE_DEVICE_COUNT": "2"}),
         ("parallel_loader.py", [], {"LAZYSCOPE_DEVICE_COUNT": "2"})]


@pytest.mark.parametrize("script, args, env", CASES, ids=[c[0] for c in CASES])
def test_example_runs(script, args, env, build_dir):
    environ = dict(os.environ, PYTHONPATH=str(build_dir / "python"), **env)
    proc = subprocess.run([sys.executable, str(EXAMPLES / script), *args], env=environ, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_recompile_demo_compiles_twice_and_the_fix_once(build_dir):
    environ = dict(os.environ, PYTHONPATH=str(build_dir / "python"))
    outs = [subprocess.run([sys.executable, str(EXAMPLES / s)], env=environ, capture_output=True, text=True,
                           timeout=120).stdout for s in ("recompile_demo.py", "recompile_fixed.py")]
    assert outs[0].rstrip().endswith("uncached compiles so far 2")
    assert outs[1].rstrip().endswith("uncached compiles so far 1")
