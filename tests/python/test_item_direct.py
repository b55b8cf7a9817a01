"""item() reads float32/float64/int/uint8/bool values straight into a Python
number (no NumPy array on the way): the same value and type as NumPy's
item() on both devices, special values included, a pending lazy value
computed first, one transfer counted; float16 and bfloat16 keep NumPy's path."""
import math

import numpy as np
import pytest

import lazyscope
from lazyscope.core import lazy_model as lm

DEVICES = ["cpu", "lazy:0"]
CASES = [
    (np.float32, [-0.0, float("inf"), float("-inf"), 0.1, 3.4028234663852886e38, 1e-45]),
    (np.float64, [-0.0, float("nan"), 1e-310, 0.1, -1.7976931348623157e308]),
    (np.int64, [-(2**63), 2**63 - 1, 0, -5]),
    (np.int32, [-(2**31), 2**31 - 1]),
    (np.uint8, [0, 255]),
    (np.bool_, [False, True]),
]


def same(a, b):
    """Equal values of the same Python type, NaN equal to NaN and -0.0 told from 0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return a == b


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype,values", CASES, ids=lambda c: getattr(c, "__name__", None))
def test_item_gives_numpys_value_and_type(device, dtype, values):
    for v in values:
        a = np.array([v], dtype=dtype)
        got = lazyscope.tensor(a, device=device).item()
        assert same(got, a.item()), (v, got, a.item())
        assert same(lazyscope.tensor(a.reshape(()), device=device).item(), a.item())


def test_item_of_a_pending_lazy_value_computes_it_and_counts_one_transfer():
    import lazyscope.debug.metrics as met

    dev = lm.lazy_device()
    x = lazyscope.tensor(np.array([1.5, -2.0], dtype=np.float32), device=dev)
    lm.mark_step()
    before = met.counter_value("TransferFromDeviceCount") or 0
    pending = (x * 3.0).sum()  # traced, not run
    assert pending.item() == np.float32(-1.5).item() and type(pending.item()) is float
    assert (met.counter_value("TransferFromDeviceCount") or 0) - before == 2  # one per item() call


@pytest.mark.parametrize("device", DEVICES)
def test_item_of_16_bit_floats_and_of_many_elements(device):
    assert lazyscope.tensor(np.array([1.5], np.float16), device=device).item() == 1.5
    b = lazyscope.full((1,), 2.5, dtype=lazyscope.bfloat16, device=device)
    assert b.item() == 2.5 and type(b.item()) is float
    with pytest.raises(Exception, match="2 elements cannot be converted"):
        lazyscope.tensor(np.ones(2, np.float32), device=device).item()


def test_a_bad_target_still_fails_at_the_read_that_runs_it():
    # The read syncs first: an error of the graph surfaces there, naming the op.
    dev = lm.lazy_device()
    logp = lazyscope.tensor(np.zeros((2, 3), np.float32), device=dev)
    loss = lazyscope.nll_loss(logp, lazyscope.tensor(np.array([0, 7]), device=dev))
    with pytest.raises(IndexError, match="nll_loss: target 7 is out of bounds"):
        loss.item()
