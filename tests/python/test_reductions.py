"""Every reduction on both devices against NumPy: all dims, one dim, several
(negative) dims, keepdim, dtypes of integer inputs."""
import numpy as np
import pytest

import lazyscope

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(5)
DIMS = [None, 0, -1, (0, 2), (1, -1), (0, 1, 2)]


def axis(dim):
    return dim if dim is None or isinstance(dim, int) else tuple(dim)


def logsumexp_ref(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    out = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    return out if keepdims else np.squeeze(out, axis=axis)


# name, call on a lazyscope tensor, NumPy reference
REDUCTIONS = [
    ("sum", lambda t, d, k: t.sum(dim=d, keepdim=k), lambda x, a, k: np.sum(x, axis=a, keepdims=k)),
    ("mean", lambda t, d, k: t.mean(d, k), lambda x, a, k: np.mean(x, axis=a, keepdims=k)),
    ("prod", lambda t, d, k: lazyscope.prod(t, d, k), lambda x, a, k: np.prod(x, axis=a, keepdims=k)),
    ("amax", lambda t, d, k: t.amax(d, keepdim=k), lambda x, a, k: np.max(x, axis=a, keepdims=k)),
    ("amin", lambda t, d, k: lazyscope.amin(t, d, k), lambda x, a, k: np.min(x, axis=a, keepdims=k)),
    ("var", lambda t, d, k: t.var(d, keepdim=k), lambda x, a, k: np.var(x, axis=a, keepdims=k, ddof=1)),
    ("var_pop", lambda t, d, k: t.var(d, keepdim=k, correction=0), lambda x, a, k: np.var(x, axis=a, keepdims=k)),
    ("var_biased", lambda t, d, k: t.var(d, False, k), lambda x, a, k: np.var(x, axis=a, keepdims=k)),
    ("std", lambda t, d, k: t.std(d, keepdim=k), lambda x, a, k: np.std(x, axis=a, keepdims=k, ddof=1)),
    ("std_fn", lambda t, d, k: lazyscope.std(t, d, keepdim=k, correction=2),
     lambda x, a, k: np.std(x, axis=a, keepdims=k, ddof=2)),
    ("logsumexp", lambda t, d, k: t.logsumexp(d, k), logsumexp_ref),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", DIMS, ids=str)
@pytest.mark.parametrize("name,fn,ref", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_reduction_matches_numpy(device, dtype, keepdim, dim, name, fn, ref):
    if name == "prod" and dim is not None and not isinstance(dim, int):
        dim = dim[0]  # PyTorch's prod takes one dim
    x = (rng.standard_normal((3, 4, 5)) + (1.0 if name == "prod" else 0.0)).astype(dtype)
    out = fn(lazyscope.tensor(x, device=device), dim, keepdim)
    expected = ref(x.astype(np.float64), axis(dim), keepdim)
    assert out.shape == np.shape(expected)
    assert out.dtype == lazyscope.tensor(x).dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out.numpy(), expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
def test_argmax_argmin_and_max_min_with_dim(device, keepdim, dim):
    x = rng.integers(-4, 4, (4, 6)).astype(np.float32)  # ties: the first index wins
    t = lazyscope.tensor(x, device=device)
    if dim is None:
        assert t.argmax().item() == np.argmax(x) and t.argmin().item() == np.argmin(x)
        assert t.max().item() == x.max() and lazyscope.min(t).item() == x.min()
        return
    np.testing.assert_array_equal(t.argmax(dim, keepdim).numpy(), np.argmax(x, axis=dim, keepdims=keepdim))
    np.testing.assert_array_equal(lazyscope.argmin(t, dim=dim, keepdim=keepdim).numpy(),
                                  np.argmin(x, axis=dim, keepdims=keepdim))
    values, indices = t.max(dim, keepdim)
    np.testing.assert_array_equal(values.numpy(), np.max(x, axis=dim, keepdims=keepdim))
    np.testing.assert_array_equal(indices.numpy(), np.argmax(x, axis=dim, keepdims=keepdim))
    low = t.min(dim=dim, keepdim=keepdim)
    np.testing.assert_array_equal(low.values.numpy(), np.min(x, axis=dim, keepdims=keepdim))
    np.testing.assert_array_equal(low.indices.numpy(), np.argmin(x, axis=dim, keepdims=keepdim))
    assert indices.dtype == lazyscope.int64


@pytest.mark.parametrize("device", DEVICES)
def test_max_with_a_tensor_is_elementwise(device):
    a, b = rng.standard_normal((3, 1)), rng.standard_normal((4,))
    out = lazyscope.tensor(a, device=device).max(lazyscope.tensor(b, device=device))
    np.testing.assert_allclose(out.numpy(), np.maximum(a, b).astype(np.float32), rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_nan_propagates_through_max_and_argmax(device):
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)
    t = lazyscope.tensor(x, device=device)
    np.testing.assert_array_equal(t.amax(1).numpy(), np.max(x, axis=1))
    np.testing.assert_array_equal(t.argmax(1).numpy(), np.argmax(x, axis=1))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [None, 0, (0, 1)], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_any_all_over_any_dims(device, dim, keepdim):
    x = rng.integers(0, 3, (2, 3, 4)) * (rng.random((2, 3, 4)) > 0.2)
    t = lazyscope.tensor(x, device=device)
    for out, ref in [(t.any(dim, keepdim), np.any(x, axis=axis(dim), keepdims=keepdim)),
                     (lazyscope.all(t, dim, keepdim), np.all(x, axis=axis(dim), keepdims=keepdim))]:
        assert out.dtype == lazyscope.bool
        np.testing.assert_array_equal(out.numpy(), ref)


@pytest.mark.parametrize("device", DEVICES)
def test_integer_reductions(device):
    x = rng.integers(-5, 5, (3, 4)).astype(np.int32)
    t = lazyscope.tensor(x, device=device)
    assert t.sum().dtype == lazyscope.int64 and t.sum().item() == x.sum()
    assert t.prod(1).tolist() == np.prod(x.astype(np.int64), axis=1).tolist()
    assert t.amax(0).dtype == lazyscope.int32 and t.amax(0).tolist() == x.max(axis=0).tolist()
    assert lazyscope.tensor([True, True, False], device=device).sum().item() == 2
    np.testing.assert_allclose(t.logsumexp(1).numpy(), logsumexp_ref(x.astype(np.float64), 1), rtol=1e-6)
    with pytest.raises(RuntimeError, match="floating point"):
        t.mean()


def test_reduction_errors_name_the_op_and_dims():
    t = lazyscope.zeros(2, 3, device="lazy:0")
    with pytest.raises(lazyscope.ShapeError, match="mean.*out of range"):
        t.mean(2)
    with pytest.raises(lazyscope.ShapeError, match="appears multiple times"):
        t.sum((1, -1))
    with pytest.raises(lazyscope.ShapeError, match="size 0"):
        lazyscope.zeros(0, 3).amax(0)


def test_lazy_reductions_equal_eager():
    x = rng.standard_normal((5, 6)).astype(np.float32)
    results = []
    for device in DEVICES:
        t = lazyscope.tensor(x, device=device)
        outs = [fn(t, d, k) for _, fn, _ in REDUCTIONS if _ != "prod" for d in (None, 1) for k in (False, True)]
        outs += [t.argmax(0), t.argmin(), (t > 0).any(1), (t > -3).all(0)]
        results.append([o.numpy() for o in outs])
    for eager, lazy in zip(*results):
        np.testing.assert_array_equal(eager, lazy)


# Summing every element: chunks of 16,384 summed on the pool, then their sums
# in order (kernels_reduce.cpp). Sizes around the chunk edges, a leading
# reduced dim with unit dims beside it, float32 and float64, sum and mean,
# against NumPy in float64; with values of one sign the float64 oracle bounds
# the float32 result to a rounding or two.
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(16383,), (16384,), (16385,), (3 * 16384 + 5,), (1 << 20,), (4097, 1, 64)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_whole_tensor_sums_and_means_match_numpy_across_chunk_edges(device, shape, dtype):
    x = (rng.random(shape) + 0.5).astype(dtype)
    t = lazyscope.tensor(x, device=device)
    exact_sum = np.sum(x.astype(np.float64))
    rtol = 3e-7 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(t.sum().numpy(), exact_sum, rtol=rtol)
    np.testing.assert_allclose(t.mean().numpy(), exact_sum / x.size, rtol=rtol)
    np.testing.assert_allclose(t.sum(dim=tuple(range(len(shape)))).numpy(), exact_sum, rtol=rtol)


def test_a_whole_tensor_sum_is_the_same_at_any_thread_count(build_dir):
    import subprocess
    import sys
    script = (
        "import numpy as np, lazyscope\n"
        "x = np.random.default_rng(3).standard_normal(5 * 16384 + 77).astype(np.float32)\n"
        "print(lazyscope.tensor(x, device='lazy:0').sum().numpy().view(np.uint32))\n"
    )
    outs = set()
    for threads in ("1", "2", "3"):
        env = dict(__import__("os").environ, LAZYSCOPE_NUM_THREADS=threads, PYTHONPATH=str(build_dir / "python"))
        proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        outs.add(proc.stdout.strip())
    assert len(outs) == 1, outs


# max/min and argmax/argmin on vector lanes (kernels_reduce.cpp): a whole
# tensor past one chunk, rows ([B, V], the index of each row's class), and
# columns ([R, C] over dim 0, C neither a multiple of the lanes nor of the
# 256-column block), float32 and float64, against NumPy. Ties keep the first
# index; a NaN wins, the first NaN's index; all -inf is -inf.
EXTREME_SHAPES = [((3 * 16384 + 11,), None), ((37, 1000), 1), ((37, 1000), -1), ((1000, 301), 0), ((5, 64, 7), 1)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape,dim", EXTREME_SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ["random", "ties", "nan", "neg_inf"])
def test_extremes_and_their_indices_match_numpy(device, shape, dim, dtype, case):
    if case == "ties":
        x = rng.integers(-3, 3, shape).astype(dtype)  # many equal extremes: the first index wins
    else:
        x = rng.standard_normal(shape).astype(dtype)
    if case == "nan":
        flat = x.reshape(-1)
        flat[rng.choice(flat.size, size=max(1, flat.size // 500), replace=False)] = np.nan
    if case == "neg_inf":
        x[...] = -np.inf
        x.reshape(-1)[::7] = np.inf
        x.reshape(-1)[::3] = -np.inf
    t = lazyscope.tensor(x, device=device)
    np.testing.assert_array_equal(t.amax(dim).numpy() if dim is not None else t.amax().numpy(), np.max(x, axis=dim))
    np.testing.assert_array_equal(lazyscope.amin(t, dim).numpy() if dim is not None else lazyscope.amin(t).numpy(),
                                  np.min(x, axis=dim))
    # NumPy's argmax/argmin also return the first NaN's index, and the first of ties.
    np.testing.assert_array_equal(t.argmax(dim).numpy() if dim is not None else t.argmax().numpy(),
                                  np.argmax(x, axis=dim))
    np.testing.assert_array_equal(lazyscope.argmin(t, dim=dim).numpy() if dim is not None else
                                  lazyscope.argmin(t).numpy(), np.argmin(x, axis=dim))


@pytest.mark.parametrize("device", DEVICES)
def test_a_whole_tensor_of_negative_infinities_has_max_negative_infinity(device):
    x = np.full(3 * 16384 + 1, -np.inf, dtype=np.float32)
    t = lazyscope.tensor(x, device=device)
    assert t.amax().item() == -np.inf and lazyscope.amin(-t).item() == np.inf
    assert t.argmax().item() == 0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", [17, 16384 * 2 + 3])
def test_a_whole_tensor_variance_matches_numpy(device, n):
    x = (rng.standard_normal(n) * 3 + 100).astype(np.float32)  # a large mean: the two-pass form matters
    t = lazyscope.tensor(x, device=device)
    np.testing.assert_allclose(t.var().numpy(), np.var(x.astype(np.float64), ddof=1), rtol=1e-6)
    np.testing.assert_allclose(t.std(correction=0).numpy(), np.std(x.astype(np.float64)), rtol=1e-6)


# logsumexp over contiguous rows (float32): the row function, rows on the
# pool. Rows longer than its 256-element block and not a multiple of the
# lanes, large values (the shift by the max matters), a row of -inf (the
# answer -inf), one with +inf (+inf), one with a NaN (NaN), and several
# trailing dims reduced at once.
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape,dim", [((40, 1001), 1), ((6, 7, 300), -1), ((5, 3, 111), (1, 2))])
def test_logsumexp_over_rows_matches_numpy(device, shape, dim):
    x = (rng.standard_normal(shape) * 5).astype(np.float32)
    rows = x.reshape(shape[0], -1) if isinstance(dim, tuple) else x.reshape(-1, shape[-1])
    rows[0] += 500.0
    rows[1] = -np.inf
    rows[2, 3] = np.inf
    rows[3, 4] = np.nan
    t = lazyscope.tensor(x, device=device)
    with np.errstate(invalid="ignore"):
        want = logsumexp_ref(x.astype(np.float64), axis=dim)
    # logsumexp_ref shifts by a max of +-inf to NaN: the answer there is the max itself.
    m = np.max(x, axis=dim)  # NaN where the row has one
    want = np.where(np.isinf(m), m, want)
    np.testing.assert_allclose(t.logsumexp(dim).numpy(), want, rtol=1e-6)
