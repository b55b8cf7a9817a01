"""bf16 mode: float tensors on lazy devices are stored as bfloat16 but report their dtype."""
import os
import subprocess
import sys

import numpy as np
import pytest

import lazyscope
from lazyscope import _C
from lazyscope.core import lazy_model as lm
from lazyscope.debug import metrics as met
from runtime_util import bf16_round


@pytest.fixture(autouse=True)
def bf16():
    lm.mark_step()
    _C.set_bf16_mode(True)
    yield
    lm.mark_step()
    _C.set_bf16_mode(False)


def test_the_oracle_rounds_to_nearest_even():
    # 1 + 2^-8 is halfway between two bf16 values: ties go to the even one (1.0).
    assert bf16_round(np.float32(1 + 2**-8)) == np.float32(1.0)
    assert bf16_round(np.float32(1 + 3 * 2**-8)) == np.float32(1 + 2**-6)
    assert bf16_round(np.float32(1 + 2**-8 + 2**-12)) == np.float32(1 + 2**-7)


def test_values_are_rounded_like_bf16_and_report_float32():
    rng = np.random.default_rng(21)
    a = rng.standard_normal(64).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    x = lazyscope.tensor(a, device="lazy:0")
    y = lazyscope.tensor(b, device="lazy:0")
    z = x * y + x
    assert z.dtype == lazyscope.float32
    got = z.numpy()
    assert got.dtype == np.float32
    ra, rb = bf16_round(a), bf16_round(b)
    np.testing.assert_array_equal(got, bf16_round(bf16_round(ra * rb) + ra))
    assert not np.array_equal(got, a * b + a)  # the precision really is reduced


def test_float64_is_stored_as_bf16_too_and_reports_float64():
    data = np.array([1.0 + 2**-10, np.pi], dtype=np.float64)
    x = lazyscope.tensor(data, device="lazy:0")
    assert x.dtype == lazyscope.float64
    np.testing.assert_array_equal(x.numpy(), bf16_round(data.astype(np.float32)).astype(np.float64))


def test_matmul_accumulates_in_float32_and_rounds_the_result():
    rng = np.random.default_rng(22)
    a = rng.standard_normal((8, 16)).astype(np.float32)
    b = rng.standard_normal((16, 4)).astype(np.float32)
    got = (lazyscope.tensor(a, device="lazy:0") @ lazyscope.tensor(b, device="lazy:0")).numpy()
    expected = bf16_round(bf16_round(a) @ bf16_round(b))
    np.testing.assert_allclose(got, expected, rtol=2**-7, atol=1e-6)


def test_integers_and_the_cpu_device_are_untouched():
    ints = lazyscope.tensor([3, 1000001], device="lazy:0")
    assert ints.numpy().tolist() == [3, 1000001]
    exact = np.float32(1 + 2**-12)
    assert lazyscope.tensor([exact]).numpy()[0] == exact


def test_live_device_bytes_halve():
    _C.set_bf16_mode(False)
    before = met.counter_value("LiveDeviceBufferBytes") or 0
    full = lazyscope.zeros(1024, device="lazy:0")
    full_bytes = met.counter_value("LiveDeviceBufferBytes") - before
    del full
    _C.set_bf16_mode(True)
    half = lazyscope.zeros(1024, device="lazy:0")
    half_bytes = met.counter_value("LiveDeviceBufferBytes") - before
    assert (full_bytes, half_bytes) == (4096, 2048)
    assert half.dtype == lazyscope.float32


def test_gradients_train_in_bf16():
    rng = np.random.default_rng(23)
    xs = rng.standard_normal((32, 2)).astype(np.float32)
    ys = xs @ np.array([[2.0], [-1.0]], dtype=np.float32)
    x = lazyscope.tensor(xs, device="lazy:0")
    y = lazyscope.tensor(ys, device="lazy:0")
    w = lazyscope.zeros(2, 1, device="lazy:0", requires_grad=True)
    for _ in range(60):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        with lazyscope.no_grad():
            w = (w - w.grad * 0.1).detach().requires_grad_()
        lm.mark_step()
    np.testing.assert_allclose(w.detach().numpy().ravel(), [2.0, -1.0], atol=0.05)


@pytest.mark.parametrize("variable", ["LAZYSCOPE_USE_BF16", "XLA_USE_BF16"])
def test_the_environment_switches_bf16_on_at_start_up(build_dir, variable):
    script = ("import lazyscope\nfrom lazyscope import _C\n"
              "x = lazyscope.tensor([1.0 + 2**-10], device='lazy:0')\n"
              "print(_C.bf16_mode(), x.dtype == lazyscope.float32, x.numpy()[0] == 1.0)\n")
    env = dict(os.environ, PYTHONPATH=str(build_dir / "python"))
    env.pop("LAZYSCOPE_USE_BF16", None)
    env.pop("XLA_USE_BF16", None)
    env[variable] = "1"
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "True"]
