"""Bad input on both devices: each kind raises a clear Python exception that
names the op, the shapes (or dtype, devices, index, size) and the line of this
file that called the op, and the process keeps working afterwards.

Eager ("cpu") errors surface at the call; on "lazy:0" shape, device and dtype
errors surface at the call too (tracing infers shapes), while errors that
depend on values or need the output buffer (an out-of-range index, a
too-large allocation) surface at the sync, naming the line that traced the op.
"""
import numpy as np
import pytest

import lazyscope

DEVICES = ["cpu", "lazy:0"]
HUGE = 2 ** 20  # [HUGE, HUGE] float32 is 4 TiB: more than any test machine holds


def other(device):
    return "lazy:0" if device == "cpu" else "cpu"


# kind, the call (one line: its line is the one the message must name),
# exception class, fragments the message must hold, whether a lazy device
# raises at the sync rather than at the call.
CASES = [
    ("shape_broadcast", lambda d: lazyscope.ones(2, 3, device=d) + lazyscope.ones(4, 5, device=d),
     lazyscope.ShapeError, ["add", "[2, 3]", "[4, 5]"], False),
    ("shape_matmul", lambda d: lazyscope.ones(2, 3, device=d) @ lazyscope.ones(4, 5, device=d),
     lazyscope.ShapeError, ["matmul", "[2, 3]", "[4, 5]"], False),
    ("shape_cat", lambda d: lazyscope.cat([lazyscope.ones(2, 3, device=d), lazyscope.ones(2, 4, device=d)]),
     lazyscope.ShapeError, ["cat", "[2, 3]", "[2, 4]"], False),
    ("device_mix", lambda d: lazyscope.ones(2, 3, device=d) * lazyscope.ones(2, 3, device=other(d)),
     lazyscope.DeviceMismatchError, ["mul", "cpu", "lazy:0"], False),
    ("dtype_mean", lambda d: lazyscope.ones(2, 3, dtype=lazyscope.int64, device=d).mean(),
     lazyscope.EngineError, ["mean", "int64"], False),
    ("dtype_conv2d", lambda d: lazyscope.conv2d(lazyscope.ones(1, 1, 3, 3, dtype=lazyscope.int32, device=d),
                                                 lazyscope.ones(1, 1, 1, 1, dtype=lazyscope.int32, device=d)),
     lazyscope.EngineError, ["conv2d", "int32"], False),
    ("index_gather", lambda d: lazyscope.ones(2, 3, device=d).gather(1, lazyscope.tensor([[5]], device=d)),
     IndexError, ["gather", "index 5", "size 3"], True),
    ("index_getitem", lambda d: lazyscope.ones(2, 3, device=d)[lazyscope.tensor([7], device=d)],
     IndexError, ["index", "index 7", "size 2"], True),
    ("index_one_hot", lambda d: lazyscope.nn.functional.one_hot(lazyscope.tensor([1, 4], device=d), 3),
     IndexError, ["one_hot", "4"], True),
    # Shape checks written in Python (nn modules and functions) name the
    # user's line too, not only the engine's ops.
    ("shape_linear_module", lambda d: lazyscope.nn.Linear(3, 4).to(d)(lazyscope.ones(2, 5, device=d)),
     lazyscope.ShapeError, ["linear", "(2, 5)", "(4, 3)"], False),
    ("shape_linear_function", lambda d: lazyscope.nn.functional.linear(lazyscope.ones(2, 5, device=d), lazyscope.ones(4, 3, device=d)),
     lazyscope.ShapeError, ["linear", "(2, 5)", "(4, 3)"], False),
    ("shape_attention", lambda d: lazyscope.nn.MultiheadAttention(8, 2).to(d)(*[lazyscope.ones(4, 8, device=d)] * 3),
     lazyscope.ShapeError, ["MultiheadAttention", "3-D", "(4, 8)"], False),
    ("shape_lstm", lambda d: lazyscope.nn.LSTM(4, 3).to(d)(lazyscope.ones(2, 5, 6, device=d)),
     lazyscope.ShapeError, ["LSTM", "input_size", "6"], False),
    ("shape_batch_norm", lambda d: lazyscope.nn.BatchNorm1d(4).to(d)(lazyscope.ones(2, 5, device=d)),
     lazyscope.ShapeError, ["BatchNorm1d", "4 channels", "(2, 5)"], False),
    ("alloc_matmul", lambda d: lazyscope.ones(HUGE, 1, device=d) @ lazyscope.ones(1, HUGE, device=d),
     MemoryError, ["matmul", f"[{HUGE}, {HUGE}]", "bytes"], True),
    ("alloc_overflow", lambda d: lazyscope.ones(1, 1, device=d).expand(2 ** 31, 2 ** 31) * 2.0,
     MemoryError, ["expand", f"[{2 ** 31}, {2 ** 31}]", "overflows"], True),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind,call,error,fragments,at_sync", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_a_clear_error_naming_the_op_and_line(device, kind, call, error, fragments, at_sync):
    line = f"test_bad_input.py:{call.__code__.co_firstlineno}"
    with pytest.raises(error) as info:
        out = call(device)
        assert at_sync and device == "lazy:0", f"{kind}: no error at the call on {device}"
        out.numpy()  # the sync that runs the traced graph
    message = str(info.value)
    assert isinstance(info.value, lazyscope.EngineError)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    assert line in message, f"{line} not in {message!r}"
    if at_sync and device == "lazy:0":
        assert f"(traced at {line})" in message
    # The process survives and the device keeps working, lazy graphs included.
    x = lazyscope.tensor(np.arange(6.0).reshape(2, 3), device=device)
    assert (x * 2 + 1).sum().item() == 36.0
    lazyscope.core.lazy_model.mark_step()
    assert (x @ x.T).numpy().tolist() == [[5.0, 14.0], [14.0, 50.0]]


def test_memory_errors_are_memory_errors_and_engine_errors():
    assert issubclass(lazyscope.OutOfMemoryError, MemoryError)
    assert issubclass(lazyscope.OutOfMemoryError, lazyscope.EngineError)


@pytest.mark.parametrize("device", DEVICES)
def test_a_failed_allocation_in_a_lazy_step_does_not_poison_the_next(device):
    big = lazyscope.ones(1, 1, device=device)
    good = lazyscope.ones(3, device=device) * 4
    with pytest.raises(MemoryError):
        (big.expand(HUGE, HUGE) + 1).numpy()
    assert good.sum().item() == 12.0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("make, op", [
    (lambda d: lazyscope.zeros(2**40, device=d), "zeros"),
    (lambda d: lazyscope.ones(2**21, 2**21, device=d), "ones"),
    (lambda d: lazyscope.randn(2**40, device=d), "randn"),
    (lambda d: lazyscope.rand(2**40, device=d), "rand"),
])
def test_creating_a_too_large_tensor_names_the_op_the_shape_and_the_bytes(device, make, op):
    with pytest.raises(lazyscope.OutOfMemoryError, match=rf"{op}: cannot allocate a tensor of shape \[.*\] \(\d+ bytes\)"):
        make(device)
    assert lazyscope.zeros(2, 3, device=device).sum().item() == 0.0  # the process keeps working
