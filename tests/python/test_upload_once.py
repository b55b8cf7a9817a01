"""An array uploaded to a lazy device (lazyscope.tensor(array, device=...),
_C.from_numpy(array, device)) is copied once, straight into the device's
buffer (Tensor::from_host): the values arrive exactly, the tensor does not
alias the array, the transfer is counted once, and no host copy is made
on the way (it was: a host buffer first, then to()'s transfer)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import lazyscope
from lazyscope import _C
from lazyscope.core import lazy_model as lm
from lazyscope.debug import metrics as met
from runtime_util import bf16_round


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.uint8, np.bool_, np.float16])
@pytest.mark.parametrize("device", ["lazy:0", "cpu"])
def test_values_arrive_and_the_array_is_not_aliased(dtype, device):
    source = (np.random.default_rng(1).standard_normal((5, 7)) * 10).astype(dtype)
    expected = source.copy()
    t = lazyscope.tensor(source, device=device)
    source[...] = 0 if dtype != np.bool_ else ~source  # the caller reuses its batch array
    np.testing.assert_array_equal(t.numpy(), expected)
    assert t.numpy().dtype == expected.dtype


@pytest.mark.parametrize("make", [
    lambda a: a.T,                       # Fortran order
    lambda a: a[:, ::2],                 # strided
    lambda a: a[1:3],                    # an offset slice
    lambda a: np.float32(a[0, 0]),       # 0-d
    lambda a: a[:0],                     # empty
])
def test_arrays_of_any_layout_arrive_exactly(make):
    base = np.arange(48, dtype=np.float32).reshape(6, 8)
    source = np.asarray(make(base))
    expected = source.copy()
    t = _C.from_numpy(source, "lazy:0")
    base[...] = -1
    assert tuple(t.shape) == expected.shape
    np.testing.assert_array_equal((t + 0).numpy(), expected)  # through a compiled graph too
    np.testing.assert_array_equal(t.numpy(), expected)


def test_the_upload_is_one_counted_transfer():
    lm.mark_step()
    met.clear_counters()
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    lazyscope.tensor(a, device="lazy:0")
    assert met.counter_value("TransferToDeviceCount") == 1
    assert met.counter_value("TransferToDeviceBytes") == 48


def test_bf16_mode_still_narrows_on_the_way_up():
    _C.set_bf16_mode(True)
    try:
        a = np.float32([1 + 2**-8, 1 + 3 * 2**-8, -2.5])
        t = lazyscope.tensor(a, device="lazy:0")
        a[...] = 0
        assert t.dtype == lazyscope.float32
        np.testing.assert_array_equal(t.numpy(), bf16_round(np.float32([1 + 2**-8, 1 + 3 * 2**-8, -2.5])))
    finally:
        _C.set_bf16_mode(False)


PEAK_SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import lazyscope

    def peak_kib():
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))

    a = np.ones(int(sys.argv[2]) * 2**20 // 4, dtype=np.float32)  # pages touched
    lazyscope.tensor(a[:1024], device="lazy:0")  # the first upload's one-off costs
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the peak from now on (whatever import and set-up reached)
    before = peak_kib()
    t = lazyscope.tensor(a, device="lazy:0")
    after = peak_kib()
    assert float(t.sum().item()) == a.size
    print((after - before) / 1024)
""")


def test_no_host_copy_is_made_on_the_way():
    # The process's peak grows by the device's copy alone (one array's
    # size); a host copy on the way added a second.
    mib = 128
    package = os.path.dirname(os.path.dirname(lazyscope.__file__))
    grown = float(subprocess.run([sys.executable, "-c", PEAK_SCRIPT, package, str(mib)], check=True,
                                 capture_output=True, text=True).stdout)
    assert mib * 0.8 < grown < mib * 1.5, f"uploading {mib} MiB raised the peak by {grown:.0f} MiB"


# Reading back: off a lazy device the array takes the transfer's buffer
# (no second copy); it is the array's own: writing it changes neither the
# tensor nor a second read, and it outlives the tensor. An eager tensor's
# array is a copy of its buffer.
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_, np.float16])
@pytest.mark.parametrize("device", ["lazy:0", "cpu"])
def test_a_read_back_array_is_its_own(dtype, device):
    values = (np.random.default_rng(2).standard_normal((6, 9)) * 10).astype(dtype)
    t = lazyscope.tensor(values, device=device)
    u = (t + t) if dtype != np.bool_ else (t | t)  # a computed result, not the upload's buffer
    lm.mark_step()
    want = (values + values) if dtype != np.bool_ else values
    first = u.numpy()
    np.testing.assert_array_equal(first, want)
    assert first.flags.writeable and first.flags.c_contiguous and first.dtype == want.dtype
    first[...] = 0
    np.testing.assert_array_equal(u.numpy(), want)  # the tensor is untouched
    second = u.numpy()
    assert not np.shares_memory(first, second)
    del t, u
    lm.mark_step()
    np.testing.assert_array_equal(second, want)  # alive after its tensor
