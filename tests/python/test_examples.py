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


def run_example(build_dir, script, *args, **env):
    environ = dict(os.environ, PYTHONPATH=str(build_dir / "python"), **env)
    proc = subprocess.run([sys.executable, str(EXAMPLES / script), *args], env=environ, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.parametrize("flag", ["0", "1"])
def test_bf16_example_reports_float32_and_a_slightly_different_loss(build_dir, flag):
    out = run_example(build_dir, "bf16.py", LAZYSCOPE_USE_BF16=flag)
    assert f"bf16 mode: {'on' if flag == '1' else 'off'}" in out
    assert "the weight reports lazyscope.float32 on lazy:0 and lazyscope.float32 on the CPU" in out
    fp32 = float(out.split("float32 math: loss ")[1].split()[0])
    bf16 = float(out.split("bf16 math:    loss ")[1].split()[0])
    assert fp32 != bf16 and abs(fp32 - bf16) < 1e-2  # bf16 rounding: close, not equal


def test_examples_follow_the_default_device_of_the_run(build_dir):
    # lazyscope run --device cpu sets LAZYSCOPE_DEFAULT_DEVICE=cpu: the same
    # script then runs eagerly, with no graph compiled.
    out = run_example(build_dir, "recompile_demo.py", LAZYSCOPE_DEFAULT_DEVICE="cpu")
    assert out.rstrip().endswith("uncached compiles so far 0")
