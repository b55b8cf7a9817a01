"""nonzero, masked_select, x[mask] and unique: checked against NumPy; on a lazy device each is a counted fallback."""
import os

import numpy as np
import pytest

import lazyscope
from lazyscope import _C
from lazyscope.core import lazy_model as lm
from runtime_util import capture_events

DEVICES = ["cpu", "lazy:0"]
THIS_FILE = os.path.basename(__file__)


@pytest.fixture(autouse=True)
def clean():
    lm.mark_step()
    _C.reset_metrics()


def fallbacks(op):
    return lm.counters().get(f"Fallback.{op}", 0)


@pytest.mark.parametrize("device", DEVICES)
def test_nonzero_matches_numpy(device):
    data = np.array([[0, 1.5, 0], [2, 0, -3]], dtype=np.float32)
    x = lazyscope.tensor(data, device=device)
    np.testing.assert_array_equal((x * 1).nonzero().numpy(), np.argwhere(data))
    rows, cols = lazyscope.nonzero(x, as_tuple=True)
    np.testing.assert_array_equal(rows.numpy(), np.nonzero(data)[0])
    np.testing.assert_array_equal(cols.numpy(), np.nonzero(data)[1])
    assert rows.dtype == lazyscope.int64
    assert fallbacks("nonzero") == (2 if device != "cpu" else 0)


@pytest.mark.parametrize("device", DEVICES)
def test_nonzero_of_nothing_is_empty(device):
    out = lazyscope.zeros(3, device=device).nonzero()
    assert tuple(out.shape) == (0, 1)


@pytest.mark.parametrize("device", DEVICES)
def test_masked_select_broadcasts_and_matches_numpy(device):
    rng = np.random.default_rng(3)
    data = rng.standard_normal((3, 4)).astype(np.float32)
    column_mask = np.array([True, False, True, True])
    x = lazyscope.tensor(data, device=device)
    out = lazyscope.masked_select(x, lazyscope.tensor(column_mask, device=device))
    np.testing.assert_array_equal(out.numpy(), data[np.broadcast_to(column_mask, data.shape)])
    out2 = x.masked_select(x > 0)
    np.testing.assert_array_equal(out2.numpy(), data[data > 0])
    assert fallbacks("masked_select") == (2 if device != "cpu" else 0)


@pytest.mark.parametrize("device", DEVICES)
def test_boolean_mask_indexing_matches_numpy(device):
    rng = np.random.default_rng(4)
    data = rng.standard_normal((4, 3, 2)).astype(np.float32)
    x = lazyscope.tensor(data, device=device)
    full = x[x > 0]
    np.testing.assert_array_equal(full.numpy(), data[data > 0])
    rows = np.array([True, False, True, True])
    leading = x[lazyscope.tensor(rows, device=device)]
    np.testing.assert_array_equal(leading.numpy(), data[rows])
    assert tuple(leading.shape) == (3, 3, 2)


def test_boolean_mask_of_the_wrong_shape_names_both_shapes():
    x = lazyscope.zeros(4, 3)
    with pytest.raises(IndexError, match=r"mask \[3\].*\[4, 3\]"):
        x[lazyscope.tensor([True, False, True])]


def test_a_non_bool_mask_is_an_error_naming_the_op_and_line():
    x = lazyscope.zeros(3, device="lazy:0")
    with pytest.raises(RuntimeError, match=r"masked_select: expected a bool mask, got float32.*" + THIS_FILE):
        lazyscope.masked_select(x, x)


@pytest.mark.parametrize("device", DEVICES)
def test_masked_select_gradient_scatters_back(device):
    data = np.array([[1.0, -2.0], [3.0, -4.0]], dtype=np.float32)
    x = lazyscope.tensor(data, device=device, requires_grad=True)
    y = lazyscope.masked_select(x, x > 0)
    (y * lazyscope.tensor([5.0, 7.0], device=device)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.array([[5.0, 0.0], [7.0, 0.0]], dtype=np.float32))
    z = lazyscope.tensor(data, device=device, requires_grad=True)
    (z[z < 0] ** 2).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), np.where(data < 0, 2 * data, 0))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.int64, np.float32])
def test_unique_matches_numpy(device, dtype):
    data = np.array([[3, 1, 2], [3, 7, 1]], dtype=dtype)
    x = lazyscope.tensor(data, device=device)
    values, inverse, counts = lazyscope.unique(x, return_inverse=True, return_counts=True)
    ref_values, ref_inverse, ref_counts = np.unique(data, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(values.numpy(), ref_values)
    np.testing.assert_array_equal(inverse.numpy(), ref_inverse.reshape(data.shape))
    np.testing.assert_array_equal(counts.numpy(), ref_counts)
    np.testing.assert_array_equal(x.unique().numpy(), ref_values)
    assert fallbacks("unique") == (2 if device != "cpu" else 0)


def test_lazy_loop_calling_nonzero_counts_one_fallback_per_step_with_the_line():
    rng = np.random.default_rng(5)
    w = lazyscope.tensor(rng.standard_normal(8).astype(np.float32), device="lazy:0")
    with capture_events() as events:
        for step in range(4):
            w = w * 0.5 + 0.1
            idx = (w > 0).nonzero()  # nonzero-in-loop
            w = w + idx.shape[0]
            lm.mark_step()
    found = events.of("fallback")
    assert [f["op"] for f in found] == ["nonzero"] * 4
    assert [int(f["step"]) for f in found] == sorted(int(f["step"]) for f in found)
    assert len({int(f["step"]) for f in found}) == 4
    with open(__file__) as f:
        line = next(i for i, text in enumerate(f, 1) if "# nonzero-in-loop" in text)
    for f in found:
        assert f["reason"] == "FALLBACK_REASON_DATA_DEPENDENT"
        assert f["source"]["file"].endswith(THIS_FILE) and f["source"]["line"] == line
        assert f["graph_cut_nodes"] >= 1  # w's pending update was cut
    assert lm.counters()["Fallback.nonzero"] == 4
