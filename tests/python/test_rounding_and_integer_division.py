"""Rounding and integer division (issue 15 item 7): sign, floor, ceil, round,
trunc, floor_divide (//), remainder (%), fmod and div(rounding_mode=), checked
against NumPy (Python's // and % are NumPy's floor_divide and mod; C's fmod is
np.fmod) on both devices, gradients against central finite differences, and
integer division by zero raising as PyTorch's CPU kernels do."""
import numpy as np
import pytest

import lazyscope
from lazyscope.core import lazy_model as lm
from test_autograd import numeric_grads

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(15)

ROUNDING = [
    ("sign", lambda t: t.sign(), np.sign),
    ("floor", lazyscope.floor, np.floor),
    ("ceil", lambda t: t.ceil(), np.ceil),
    ("round", lazyscope.round, np.round),  # both half to even
    ("trunc", lambda t: t.trunc(), np.trunc),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,fn,ref", ROUNDING, ids=[r[0] for r in ROUNDING])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
def test_rounding_matches_numpy(device, name, fn, ref, dtype):
    x = np.concatenate([rng.standard_normal(20) * 4, [0.5, 1.5, 2.5, -0.5, -2.5, 0.0, -0.0, 3.0]])
    x = x.astype(dtype) if np.dtype(dtype).kind == "f" else np.round(x * 3).astype(dtype)
    out = fn(lazyscope.tensor(x, device=device))
    assert out.dtype == lazyscope.tensor(x).dtype  # integers round to themselves, dtype kept
    np.testing.assert_array_equal(out.numpy(), ref(x))


def operands(dtype):
    a = np.round(rng.standard_normal((4, 5)) * 10)
    b = np.round(rng.standard_normal((1, 5)) * 4)
    b[b == 0] = 3
    b[0, 0], b[0, 1] = -3, 3  # both signs of divisor against both signs of dividend
    return a.astype(dtype), b.astype(dtype)


DIVISIONS = [
    ("floor_divide", lambda a, b: a // b, np.floor_divide),
    ("floor_divide_fn", lazyscope.floor_divide, np.floor_divide),
    ("div_floor", lambda a, b: a.div(b, rounding_mode="floor"), np.floor_divide),
    ("remainder", lambda a, b: a % b, np.mod),
    ("remainder_fn", lambda a, b: a.remainder(b), np.mod),
    ("fmod", lazyscope.fmod, np.fmod),
    ("div_trunc", lambda a, b: lazyscope.div(a, b, rounding_mode="trunc"), lambda a, b: np.trunc(np.true_divide(a, b))),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,fn,ref", DIVISIONS, ids=[d[0] for d in DIVISIONS])
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float32, np.float64])
def test_integer_division_matches_python_semantics(device, name, fn, ref, dtype):
    a, b = operands(dtype)
    out = fn(lazyscope.tensor(a, device=device), lazyscope.tensor(b, device=device))
    want = ref(a, b).astype(dtype)
    assert out.dtype == lazyscope.tensor(a).dtype  # integers stay integers, as in PyTorch
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_operators_with_python_numbers_on_either_side(device):
    a = np.array([-7, -3, 0, 4, 9], dtype=np.int64)
    t = lazyscope.tensor(a, device=device)
    assert (t // 2).tolist() == (a // 2).tolist() and (t // 2).dtype == lazyscope.int64
    assert (t % -3).tolist() == (a % -3).tolist()
    assert (17 // lazyscope.tensor([5, -5, 3], device=device)).tolist() == [3, -4, 5]
    assert (17 % lazyscope.tensor([5, -5, 3], device=device)).tolist() == [2, -3, 2]
    # a float scalar promotes to float, as in PyTorch
    np.testing.assert_allclose((t // 2.5).numpy(), np.floor_divide(a, 2.5).astype(np.float32))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fn", [lambda a, b: a // b, lambda a, b: a % b, lazyscope.fmod,
                                lambda a, b: a.div(b, rounding_mode="trunc")],
                         ids=["floor_divide", "remainder", "fmod", "div_trunc"])
def test_integer_division_by_zero_raises(device, fn):
    a = lazyscope.tensor([1, 2, 3], device=device)
    b = lazyscope.tensor([1, 0, 1], device=device)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(a, b).tolist()  # on lazy:0 the kernel runs at the read
    lm.mark_step()


@pytest.mark.parametrize("device", DEVICES)
def test_float_division_by_zero_gives_inf_and_nan(device):
    a = np.array([1.0, -1.0, 0.0, 5.0], dtype=np.float32)
    b = np.zeros(4, dtype=np.float32)
    ta, tb = lazyscope.tensor(a, device=device), lazyscope.tensor(b, device=device)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal((ta // tb).numpy(), np.floor_divide(a, b))
        np.testing.assert_array_equal((ta % tb).numpy(), np.mod(a, b))
        np.testing.assert_array_equal(lazyscope.fmod(ta, tb).numpy(), np.fmod(a, b))


def test_bad_rounding_mode_names_the_choices():
    with pytest.raises(RuntimeError, match="rounding_mode.*'trunc' or 'floor'.*'up'"):
        lazyscope.div(lazyscope.ones(2), 2, rounding_mode="up")


GRADS = [
    ("sign", lambda a: a.sign(), np.sign),
    ("floor", lambda a: a.floor(), np.floor),
    ("ceil", lambda a: a.ceil(), np.ceil),
    ("round", lambda a: a.round(), np.round),
    ("trunc", lambda a: a.trunc(), np.trunc),
    ("floor_divide", lambda a, b: a // b, np.floor_divide),
    ("remainder", lambda a, b: a % b, np.mod),
    ("fmod", lambda a, b: lazyscope.fmod(a, b), np.fmod),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,fn,ref", GRADS, ids=[g[0] for g in GRADS])
def test_gradients_match_finite_differences(device, name, fn, ref):
    # Values away from the jumps (integers, and multiples of the divisor), where differences are meaningless.
    arity = fn.__code__.co_argcount
    a = np.floor(rng.standard_normal((3, 4)) * 5) + 0.3 + 0.4 * rng.random((3, 4))
    if arity == 2:
        b = np.array([[1.7, -2.3, 3.1, -0.9]])
        a = b * (np.floor(rng.standard_normal((3, 4)) * 3) + 0.2 + 0.6 * rng.random((3, 4)))  # a / b off integers
    arrays = [a] if arity == 1 else [a, b]
    weights = rng.standard_normal(np.shape(ref(*arrays)))
    leaves = [lazyscope.tensor(x, device=device, requires_grad=True) for x in arrays]
    (fn(*leaves) * lazyscope.tensor(weights, device=device)).sum().backward()
    for leaf, want in zip(leaves, numeric_grads(ref, arrays, weights)):
        got = leaf.grad.numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
