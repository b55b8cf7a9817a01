"""x ** 2 squares: the fused row, its compiled loop and the standalone kernel
give x * x to the bit (NumPy's float32 square: correctly rounded, where a
vector powf is within a few ulp and computed powf in every lane); other
exponents still go through pow. Each mode runs in a child process (settings
are read once per process): the interpreter's tiles on each instruction set,
the loop compiled at run time, and the eager `cpu` device."""
import os
import subprocess
import sys

import numpy as np
import pytest

SCRIPT = r"""
import sys, numpy as np, lazyscope
device, out = sys.argv[1], sys.argv[2]
x = np.load(out + "_x.npy")
e = np.load(out + "_e.npy")
t = lazyscope.tensor(x, device=device)
te = lazyscope.tensor(e, device=device)
np.save(out + "_square.npy", (t ** 2.0).numpy())              # a Python number: one scalar
np.save(out + "_chain.npy", ((t * 1.0) ** 2 + 0.0).numpy())   # inside a fused chain
np.save(out + "_mixed.npy", (t ** te).numpy())                # per element: some 2, some not
np.save(out + "_cube.npy", (t ** 3.0).numpy())
from lazyscope.debug import metrics as met
print("FusionJitRuns", met.counter_value("FusionJitRuns") or 0)
"""


def values():
    rng = np.random.default_rng(21)
    x = (rng.standard_normal(5 * 1024 + 37) * 10).astype(np.float32)
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-40, -1e-40, 3e38, -3e38, 1.0000001], np.float32)
    x[: special.size] = special
    e = np.where(rng.random(x.size) < 0.5, np.float32(2.0), np.float32(3.0)).astype(np.float32)
    return x, e


@pytest.mark.parametrize("mode", ["tiles-x86-64", "tiles-avx2", "tiles-avx512f", "compiled", "cpu"])
def test_x_to_the_power_two_is_its_square_to_the_bit(build_dir, tmp_path, mode):
    x, e = values()
    out = str(tmp_path / "pow")
    np.save(out + "_x.npy", x)
    np.save(out + "_e.npy", e)
    env = dict(os.environ, PYTHONPATH=str(build_dir / "python"), LAZYSCOPE_NUM_THREADS="2",
               LAZYSCOPE_KERNEL_CACHE_DIR=str(tmp_path / "kernels"))
    if mode.startswith("tiles-"):
        env.update(LAZYSCOPE_FUSION_JIT="0", LAZYSCOPE_CPU_ISA=mode.split("-", 1)[1])
    elif mode == "compiled":
        env.update(LAZYSCOPE_FUSION_JIT_MIN_ELEMENTS="1000", LAZYSCOPE_FUSION_JIT_SYNC="1")
    device = "cpu" if mode == "cpu" else "lazy:0"
    proc = subprocess.run([sys.executable, "-c", SCRIPT, device, out], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    runs = int(proc.stdout.split("FusionJitRuns")[1])
    assert (runs > 0) == (mode == "compiled"), proc.stdout  # the mode ran the code it names
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        square = x * x
        cube = np.power(x.astype(np.float64), 3).astype(np.float32)
    for tag in ("square", "chain"):
        got = np.load(out + f"_{tag}.npy")
        np.testing.assert_array_equal(got.view(np.uint32), square.view(np.uint32), err_msg=tag)
    mixed = np.load(out + "_mixed.npy")
    twos = e == 2.0
    np.testing.assert_array_equal(mixed[twos].view(np.uint32), square[twos].view(np.uint32))
    np.testing.assert_allclose(mixed[~twos], cube[~twos], rtol=1e-5)
    np.testing.assert_allclose(np.load(out + "_cube.npy"), cube, rtol=1e-5)
