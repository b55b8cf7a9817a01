"""Uploads to a lazy device: the values arrive exactly, and repeated uploads
reuse freed memory (core/buffer.cpp: with aligned_alloc, glibc 2.36 put every
200 KB batch on fresh pages and the process grew ~200 KB per upload)."""
import numpy as np
import pytest

import lazyscope
from lazyscope.core import lazy_model as lm


def resident_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


@pytest.mark.parametrize("shape", [(1,), (3, 5), (64, 1, 28, 28), (7, 300, 31)])
def test_upload_round_trips_exactly(shape):
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    t = lazyscope.tensor(a, device=lm.lazy_device())
    np.testing.assert_array_equal((t * 2).numpy(), a * 2)
    np.testing.assert_array_equal(t.numpy(), a)


def test_repeated_uploads_reuse_memory():
    device = lm.lazy_device()
    a = np.random.default_rng(0).standard_normal((64, 1, 28, 28)).astype(np.float32)  # 200 KB, as an MNIST batch
    for _ in range(20):  # warm up: the allocator's arenas and thresholds settle
        lazyscope.tensor(a, device=device)
    before = resident_mib()
    for _ in range(400):  # 78 MiB of uploads: the old allocation grew by about that much
        lazyscope.tensor(a, device=device)
    grown = resident_mib() - before
    assert grown < 20, f"400 uploads of 200 KB grew the process by {grown:.1f} MiB: freed buffers are not reused"
