"""CPU fallbacks: forced and unlowered ops run on the host, counted, timed and reported with the user's line."""
import os
import subprocess
import sys

import numpy as np
import pytest

import lazyscope
from lazyscope import _C
from lazyscope.core import lazy_model as lm
from runtime_util import capture_events

THIS_FILE = os.path.basename(__file__)


@pytest.fixture(autouse=True)
def clean():
    lm.mark_step()
    _C.reset_metrics()
    _C.set_forced_fallbacks([])
    _C._set_unlowered_ops([])
    yield
    _C.set_forced_fallbacks([])
    _C._set_unlowered_ops([])


def line_of(marker):
    with open(__file__) as f:
        for number, text in enumerate(f, 1):
            if marker in text and "line_of(" not in text:
                return number
    raise AssertionError(marker)


def test_forced_exp_gives_the_same_values_counts_and_reports_the_line():
    data = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    x = lazyscope.tensor(data, device="lazy:0")
    plain = (x * 2).exp().numpy()
    lm.mark_step()
    _C.reset_metrics()
    _C.set_forced_fallbacks(["exp"])
    with capture_events() as events:
        y = (x * 2).exp()  # forced-exp-line
        result = y.numpy()
    np.testing.assert_allclose(result, np.exp(data * np.float32(2)), rtol=1e-6)
    np.testing.assert_array_equal(result, plain)  # the same kernel, on the host
    assert lm.counters()["Fallback.exp"] == 1
    assert lm.counters()["SyncCause.fallback"] == 1
    assert lazyscope.debug.metrics.metric_data("FallbackTime.exp")[0] == 1
    [fallback] = events.of("fallback")
    assert fallback["op"] == "exp"
    assert fallback["reason"] == "FALLBACK_REASON_FORCED"
    assert fallback["dtype"] == "float32"
    assert fallback["graph_cut_nodes"] == 1  # the pending mul
    assert int(fallback["bytes"]) == 2 * data.nbytes  # down and back up
    assert fallback["source"]["file"].endswith(THIS_FILE)
    assert fallback["source"]["line"] == line_of("# forced-exp-line")
    assert int(fallback["duration_ns"]) > 0
    # The cut ran as its own execution, with the fallback as its cause.
    assert [e["cause"] for e in events.of("execute")][0] == "SYNC_CAUSE_FALLBACK"


def test_a_fallback_op_result_stays_on_the_lazy_device_and_feeds_the_next_graph():
    _C.set_forced_fallbacks(["exp"])
    x = lazyscope.tensor([0.5, 1.5], device="lazy:0")
    y = x.exp() + 1
    assert str(y.device) == "lazy:0"
    np.testing.assert_allclose(y.numpy(), np.exp(np.float32([0.5, 1.5])) + 1, rtol=1e-6)


def test_gradients_flow_through_a_fallback_op():
    _C.set_forced_fallbacks(["exp", "mul"])
    xs = np.array([0.1, -0.4, 0.7], dtype=np.float32)
    w0 = np.array([1.5, 0.5, -1.0], dtype=np.float32)
    x = lazyscope.tensor(xs, device="lazy:0")
    w = lazyscope.tensor(w0, device="lazy:0", requires_grad=True)
    loss = (x * w).exp().sum()
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), xs * np.exp(xs * w0), rtol=1e-5)
    assert lm.counters()["Fallback.exp"] >= 1


def test_an_op_the_backend_does_not_lower_falls_back_for_that_dtype_only():
    _C._set_unlowered_ops([("tanh", lazyscope.float32)])
    assert not _C.backend_lowers("tanh", lazyscope.float32)
    assert _C.backend_lowers("tanh", lazyscope.float64)
    data = np.array([0.3, -1.2], dtype=np.float32)
    with capture_events() as events:
        y32 = lazyscope.tensor(data, device="lazy:0").tanh()
        y64 = lazyscope.tensor(data.astype(np.float64), device="lazy:0").tanh()
        lm.mark_step()
    np.testing.assert_allclose(y32.numpy(), np.tanh(data), rtol=1e-6)
    np.testing.assert_allclose(y64.numpy(), np.tanh(data.astype(np.float64)), rtol=1e-12)
    assert lm.counters()["Fallback.tanh"] == 1
    [fallback] = events.of("fallback")
    assert fallback["reason"] == "FALLBACK_REASON_NOT_LOWERED"
    assert fallback["dtype"] == "float32"
    assert fallback["graph_cut_nodes"] == 0  # its operand was already device data


def test_a_backend_replaced_between_two_traces_of_an_op_is_asked_again():
    # Traced ops remember what the backend lowers, per backend installed;
    # _set_unlowered_ops replaces its backend, often at the same address.
    data = np.array([0.3, -1.2], dtype=np.float32)
    x = lazyscope.tensor(data, device="lazy:0")
    for refused, falls_back in ((["tanh"], True), (["sin"], False), ([], False), (["tanh"], True)):
        _C._set_unlowered_ops([(op, None) for op in refused])
        _C.reset_metrics()
        y = x.tanh()
        np.testing.assert_allclose(y.numpy(), np.tanh(data), rtol=1e-6)
        assert lm.counters().get("Fallback.tanh", 0) == (1 if falls_back else 0), refused


def test_the_eager_cpu_device_never_falls_back():
    _C.set_forced_fallbacks(["exp"])
    lazyscope.tensor([1.0]).exp()
    assert lm.counters().get("Fallback.exp", 0) == 0


def test_unknown_forced_op_is_an_error_naming_it():
    with pytest.raises(RuntimeError, match="unknown op 'expp'"):
        _C.set_forced_fallbacks(["expp"])
    assert _C.forced_fallbacks() == []


def test_the_environment_setting_forces_fallbacks(build_dir):
    script = (
        "import lazyscope\n"
        "from lazyscope.core import lazy_model as lm\n"
        "x = lazyscope.tensor([1.0, 2.0], device='lazy:0')\n"
        "y = (x.exp() + x.sin()).numpy()\n"
        "c = lm.counters()\n"
        "print(c.get('Fallback.exp', 0), c.get('Fallback.sin', 0), c.get('Fallback.add', 0))\n"
    )
    env = dict(os.environ, LAZYSCOPE_FORCE_FALLBACK=" exp , sin", PYTHONPATH=str(build_dir / "python"))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "1", "0"]
