"""The everyday PyTorch surface (issue 14 §1) and the errors a user meets
(issue 15 item 6, argument-type errors): every value is checked against
NumPy, on both devices where a device matters."""
import re

import numpy as np
import pytest

import lazyscope
import lazyscope as torch

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(14)


# --- Errors name the op and the user's line, never NumPy's or pybind11's words.

def test_ragged_nested_list_names_tensor_and_the_line():
    with pytest.raises(lazyscope.ShapeError) as info:
        lazyscope.tensor([[1, 2], [3]])
    message = str(info.value)
    assert message.startswith("tensor: expected sequence of length 2 at dim 1 (got 1)")
    assert re.search(r"\(at test_pytorch_surface\.py:\d+\)$", message), message
    assert "inhomogeneous" not in message


def test_non_numeric_data_names_tensor_and_the_line():
    with pytest.raises(TypeError, match=r"tensor: expected numbers.*dtype <U3 \(at test_pytorch_surface\.py:\d+\)"):
        lazyscope.tensor("abc")
    with pytest.raises(TypeError, match=r"tensor: could not infer the dtype of list data"):
        lazyscope.tensor([object()])
    assert [10, 20, 30][lazyscope.tensor(1)] == 20  # an int tensor is an index
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        [1][lazyscope.tensor(0.0)]


def test_ragged_deeper_down_is_found_too():
    with pytest.raises(lazyscope.ShapeError, match=r"length 2 at dim 2 \(got 3\)"):
        lazyscope.tensor([[[1, 2], [3, 4]], [[1, 2], [3, 4, 5]]])


@pytest.mark.parametrize("make", [lambda: lazyscope.zeros(-1), lambda: lazyscope.ones(2, -3),
                                  lambda: lazyscope.randn(-1), lambda: lazyscope.full((-2,), 1.0)],
                         ids=["zeros", "ones", "randn", "full"])
def test_negative_dimension_names_the_op_and_the_line(make):
    with pytest.raises(lazyscope.ShapeError) as info:
        make()
    message = str(info.value)
    assert re.match(r"(zeros|ones|randn|full): trying to create a tensor with negative dimension -\d", message)
    assert re.search(r"\(at test_pytorch_surface\.py:\d+\)$", message), message
    assert "negative dimensions are not allowed" not in message


def test_argument_type_errors_name_the_signature_not_the_contents():
    t = lazyscope.arange(1000.0)
    for call, name in [(lambda: lazyscope.softmax(t, "x"), "softmax"), (lambda: t.transpose(0.5, 1), "transpose"),
                       (lambda: t.reshape("a"), "reshape")]:
        with pytest.raises(TypeError) as info:
            call()
        message = str(info.value)
        assert f"{name}() received an invalid combination of arguments" in message
        assert "Invoked with" not in message and "999." not in message and "lazyscope._C" not in message
        assert "expected one of:" in message and "Unable to cast" not in message
    with pytest.raises(TypeError, match=r"got \(Tensor\(dtype=lazyscope.float32, shape=\(1000,\)\), str\)"):
        lazyscope.softmax(t, "x")


def test_dtypes_print_as_pytorch_does():
    assert str(lazyscope.float32) == "lazyscope.float32" and repr(lazyscope.int64) == "lazyscope.int64"
    assert lazyscope.int is lazyscope.int32 and lazyscope.long is lazyscope.int64


# --- Tensor methods.

@pytest.mark.parametrize("device", DEVICES)
def test_size_ndim_and_Size(device):
    t = lazyscope.zeros(2, 3, 4, device=device)
    assert t.size(0) == 2 and t.size(-1) == 4 and t.size(dim=1) == 3 and t.ndim == 3
    assert isinstance(t.size(), lazyscope.Size) and t.size() == (2, 3, 4) and t.shape.numel() == 24
    assert repr(t.shape) == "lazyscope.Size([2, 3, 4])"
    with pytest.raises(IndexError, match=r"size: dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)"):
        t.size(3)


@pytest.mark.parametrize("device", DEVICES)
def test_clone_repeat_flip_type_as(device):
    x = np.array([[1.0, -0.0, np.nan], [np.inf, 2.5, -3.0]], dtype=np.float32)
    t = lazyscope.tensor(x, device=device)
    c = t.clone()
    np.testing.assert_array_equal(c.numpy(), x)
    assert np.signbit(c.numpy()[0, 1])  # exact: -0.0 stays -0.0
    c.add_(1)
    np.testing.assert_array_equal(t.numpy(), x)  # its own buffer
    np.testing.assert_array_equal(lazyscope.clone(t).numpy(), x)
    np.testing.assert_array_equal(t.repeat(2, 3).numpy(), np.tile(x, (2, 3)))
    np.testing.assert_array_equal(t.repeat(2, 1, 2).numpy(), np.tile(x, (2, 1, 2)))
    np.testing.assert_array_equal(t.flip(0).numpy(), np.flip(x, 0))
    np.testing.assert_array_equal(lazyscope.flip(t, (0, 1)).numpy(), np.flip(x, (0, 1)))
    np.testing.assert_array_equal(t.flip(-1).numpy(), np.flip(x, -1))
    assert t.type_as(lazyscope.tensor([1], device=device)).dtype == lazyscope.int64
    assert t.contiguous() is t and t.is_contiguous()


@pytest.mark.parametrize("device", DEVICES)
def test_flip_repeat_and_clone_gradients(device):
    a = rng.standard_normal((2, 3))
    w = rng.standard_normal((4, 3))
    leaf = lazyscope.tensor(a, device=device, requires_grad=True)
    (leaf.flip(1).repeat(2, 1).clone() * lazyscope.tensor(w, device=device)).sum().backward()
    # d/da of sum(tile(flip(a, 1), (2, 1)) * w) = flip(w[:2] + w[2:], 1)
    np.testing.assert_allclose(leaf.grad.numpy(), np.flip(w[:2] + w[2:], 1), rtol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_python_conversions_invert_and_format(device):
    t = lazyscope.tensor(2.75, device=device)
    assert float(t) == 2.75 and int(t) == 2 and format(t, ".3f") == "2.750"
    assert int(lazyscope.tensor([7], device=device)) == 7
    with pytest.raises(TypeError, match="one element"):
        float(lazyscope.ones(2, device=device))
    mask = lazyscope.tensor([True, False], device=device)
    assert (~mask).tolist() == [False, True]
    ints = np.array([0, 5, -3], dtype=np.int64)
    assert (~lazyscope.tensor(ints, device=device)).tolist() == (~ints).tolist()
    with pytest.raises(TypeError, match="bitwise_not"):
        ~lazyscope.ones(2, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_sum_with_dtype(device):
    x = np.array([1, 2, 3], dtype=np.int32)
    out = lazyscope.tensor(x, device=device).sum(dtype=lazyscope.float64)
    assert out.dtype == lazyscope.float64 and out.item() == 6.0
    assert lazyscope.sum(lazyscope.tensor(x, device=device), 0, dtype=lazyscope.float32).dtype == lazyscope.float32


def test_cuda_is_refused_naming_what_to_use():
    t = lazyscope.ones(2)
    assert t.is_cuda is False
    with pytest.raises(RuntimeError, match=r"cuda\(\): LazyScope has no CUDA backend.*xla_device"):
        t.cuda()


@pytest.mark.parametrize("device", DEVICES)
def test_uniform_and_normal_fill_in_place(device):
    lazyscope.manual_seed(3)
    t = lazyscope.zeros(2000, device=device)
    assert t.uniform_(-2, 3) is t
    v = t.numpy()
    assert v.min() >= -2 and v.max() < 3 and abs(v.mean() - 0.5) < 0.15
    v = t.normal_(1.0, 0.5).numpy()
    assert abs(v.mean() - 1.0) < 0.05 and abs(v.std() - 0.5) < 0.05


@pytest.mark.parametrize("device", DEVICES)
def test_bincount_matches_numpy(device):
    x = np.array([0, 1, 1, 3, 7, 1], dtype=np.int64)
    w = rng.random(6).astype(np.float32)
    t = lazyscope.tensor(x, device=device)
    assert t.bincount().tolist() == np.bincount(x).tolist()
    assert lazyscope.bincount(t, minlength=10).tolist() == np.bincount(x, minlength=10).tolist()
    np.testing.assert_allclose(t.bincount(lazyscope.tensor(w, device=device)).numpy(), np.bincount(x, w), rtol=1e-6)
    with pytest.raises(RuntimeError, match="non-negative"):
        lazyscope.bincount(lazyscope.tensor([-1, 2], device=device))


# --- torch functions.

@pytest.mark.parametrize("device", DEVICES)
def test_predicates_and_comparisons(device):
    x = np.array([1.0, np.inf, -np.inf, np.nan, 0.0], dtype=np.float32)
    t = lazyscope.tensor(x, device=device)
    assert lazyscope.isnan(t).tolist() == np.isnan(x).tolist()
    assert lazyscope.isfinite(t).tolist() == np.isfinite(x).tolist()
    assert t.isinf().tolist() == np.isinf(x).tolist()
    assert lazyscope.isfinite(lazyscope.tensor([1, 2], device=device)).tolist() == [True, True]
    a = rng.standard_normal(5).astype(np.float32)
    ta = lazyscope.tensor(a, device=device)
    assert lazyscope.equal(ta, ta.clone()) and not lazyscope.equal(ta, ta + 1) and not lazyscope.equal(ta, ta[:2])
    assert lazyscope.allclose(ta, ta + 1e-7) == np.allclose(a, a + np.float32(1e-7))
    assert not lazyscope.allclose(ta, ta + 1e-3)
    assert lazyscope.isclose(t, t).tolist() == np.isclose(x, x).tolist()
    assert lazyscope.isclose(t, t, equal_nan=True).tolist() == np.isclose(x, x, equal_nan=True).tolist()
    assert lazyscope.is_tensor(t) and not lazyscope.is_tensor(x) and lazyscope.numel(t) == 5


@pytest.mark.parametrize("device", DEVICES)
def test_diag_and_outer_match_numpy(device):
    v = rng.standard_normal(3)
    m = rng.standard_normal((3, 4))
    for k in (0, 1, -2):
        np.testing.assert_array_equal(lazyscope.diag(lazyscope.tensor(v, device=device), k).numpy(), np.diag(v, k))
        np.testing.assert_array_equal(lazyscope.tensor(m, device=device).diag(k).numpy(), np.diag(m, k))
    b = rng.standard_normal(4)
    np.testing.assert_array_equal(lazyscope.outer(lazyscope.tensor(v, device=device),
                                                  lazyscope.tensor(b, device=device)).numpy(), np.outer(v, b))


def test_randperm_multinomial_and_generator():
    g = lazyscope.Generator().manual_seed(5)
    p = lazyscope.randperm(10, generator=g)
    assert p.dtype == lazyscope.int64 and sorted(p.tolist()) == list(range(10))
    assert lazyscope.randperm(10, generator=lazyscope.Generator().manual_seed(5)).tolist() == p.tolist()
    weights = lazyscope.tensor([[0.0, 1.0, 0.0, 3.0], [1.0, 1.0, 1.0, 1.0]])
    s = lazyscope.multinomial(weights, 2, generator=g)
    assert s.shape == (2, 2) and set(s[0].tolist()) == {1, 3} and len(set(s[1].tolist())) == 2
    counts = np.bincount(weights[0].multinomial(4000, replacement=True).numpy(), minlength=4)
    assert counts[0] == counts[2] == 0 and abs(counts[3] / 4000 - 0.75) < 0.04
    with pytest.raises(RuntimeError, match="cannot sample 3 of 2 non-zero weights without replacement"):
        lazyscope.multinomial(weights[0], 3)
    from lazyscope.utils.data import DataLoader
    order = lambda seed: [b.tolist() for b in DataLoader(list(range(8)), batch_size=4, shuffle=True,  # noqa: E731
                                                        generator=lazyscope.Generator().manual_seed(seed))]
    assert order(3) == order(3) and sorted(sum(order(3), [])) == list(range(8))


def test_default_dtype_follows_set_default_dtype():
    assert lazyscope.get_default_dtype() == lazyscope.float32
    lazyscope.set_default_dtype(lazyscope.float64)
    try:
        assert lazyscope.tensor([1.5]).dtype == lazyscope.float64
        assert lazyscope.zeros(2).dtype == lazyscope.ones(1).dtype == lazyscope.randn(2).dtype == lazyscope.float64
        assert lazyscope.arange(0.0, 2.0).dtype == lazyscope.float64 and lazyscope.arange(3).dtype == lazyscope.int64
        assert lazyscope.tensor([1, 2]).dtype == lazyscope.int64
        assert lazyscope.nn.Linear(2, 2).weight.dtype == lazyscope.float64
    finally:
        lazyscope.set_default_dtype(lazyscope.float32)
    assert lazyscope.zeros(2).dtype == lazyscope.float32
    with pytest.raises(TypeError, match="floating-point"):
        lazyscope.set_default_dtype(lazyscope.int64)


def test_grad_mode_decorators_and_inference_mode():
    @lazyscope.no_grad
    def without():
        return lazyscope.is_grad_enabled()

    @lazyscope.inference_mode()
    def inferring():
        return lazyscope.is_grad_enabled()

    assert without() is False and inferring() is False and lazyscope.is_grad_enabled()
    with lazyscope.inference_mode():
        assert not lazyscope.is_grad_enabled()
    with lazyscope.inference_mode(False):
        assert lazyscope.is_grad_enabled()


def test_as_tensor_shares_a_tensor_and_copies_data():
    t = lazyscope.ones(3)
    assert lazyscope.as_tensor(t) is t
    assert lazyscope.as_tensor(t, dtype=lazyscope.float64).dtype == lazyscope.float64
    assert lazyscope.as_tensor([1, 2]).tolist() == [1, 2]


def test_set_printoptions_changes_how_tensors_print():
    t = lazyscope.tensor([1.23456789])
    try:
        lazyscope.set_printoptions(precision=2)
        assert str(t) == "tensor([1.23])"
    finally:
        lazyscope.set_printoptions(profile="default")
    assert str(t) == "tensor([1.2346])"


EINSUMS = [("ij,jk->ik", [(2, 3), (3, 4)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]), ("i,i->", [(3,), (3,)]),
           ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]), ("ij,kj", [(2, 3), (4, 3)]),
           ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]), ("i,j->ij", [(2,), (3,)]),
           ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("ijk,ik->j", [(2, 3, 4), (2, 4)]),
           ("ij,j->i", [(3, 1), (4,)])]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("equation,shapes", EINSUMS, ids=[e[0] for e in EINSUMS])
def test_einsum_matches_numpy_with_gradients(device, equation, shapes):
    arrays = [rng.standard_normal(s) for s in shapes]
    want = np.einsum(equation, *[np.broadcast_to(a, (3, 4)) if equation == "ij,j->i" and a.shape == (3, 1) else a
                                 for a in arrays])
    leaves = [lazyscope.tensor(a, device=device, requires_grad=True) for a in arrays]
    out = lazyscope.einsum(equation, *leaves)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12)
    if equation == "ij,j->i":
        return  # broadcast operand: the value check is the point
    weights = rng.standard_normal(np.shape(want))
    (out * lazyscope.tensor(weights, device=device)).sum().backward()
    for i, leaf in enumerate(leaves):
        # d/dA_i of sum(einsum(...) * W) is itself an einsum of W and the other operands, by NumPy.
        terms, _, result = equation.replace(" ", "").partition("->")
        terms = terms.split(",")
        if not _:
            result = "".join(sorted(c for c in "".join(terms) if "".join(terms).count(c) == 1))
        others = [t for j, t in enumerate(terms) if j != i]
        grad_eq = ",".join([result] + others) + "->" + terms[i]
        want_grad = np.einsum(grad_eq, weights, *[a for j, a in enumerate(arrays) if j != i]) \
            if set(terms[i]) <= set(result + "".join(others)) else None
        if want_grad is not None:
            np.testing.assert_allclose(leaf.grad.numpy(), want_grad, rtol=1e-10, atol=1e-12)


def test_einsum_refusals_name_the_problem():
    with pytest.raises(NotImplementedError, match="ellipsis"):
        lazyscope.einsum("...ij->...ji", lazyscope.ones(2, 2))
    with pytest.raises(NotImplementedError, match="repeated within one operand"):
        lazyscope.einsum("ii->i", lazyscope.ones(2, 2))
    with pytest.raises(RuntimeError, match=r"subscripts 'ijk' name 3 dims of an operand of shape \(2, 2\)"):
        lazyscope.einsum("ijk->i", lazyscope.ones(2, 2))


@pytest.mark.parametrize("device", DEVICES)
def test_more_torch_functions_match_numpy(device):
    a = rng.standard_normal((3, 4))
    b = rng.standard_normal((4, 5))
    c = rng.standard_normal((3, 5))
    v, w = rng.standard_normal(4), rng.standard_normal(4)
    T = lambda x: lazyscope.tensor(x, device=device)  # noqa: E731, N806
    close = lambda got, want: np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)  # noqa: E731
    close(lazyscope.addmm(T(c), T(a), T(b), beta=0.5, alpha=2.0), 0.5 * c + 2.0 * a @ b)
    close(lazyscope.addmm(T(np.full((3, 5), np.nan)), T(a), T(b), beta=0), a @ b)  # beta=0 ignores input
    close(lazyscope.baddbmm(T(c[None]), T(a[None]), T(b[None])), (c + a @ b)[None])
    close(lazyscope.dot(T(v), T(w)), np.dot(v, w))
    close(T(a).diagonal(1), np.diagonal(a, 1))
    close(lazyscope.diff(T(a), n=2, dim=1), np.diff(a, n=2, axis=1))
    close(lazyscope.reciprocal(T(a)), 1 / a)
    close(lazyscope.square(T(a)), a * a)
    assert [u.tolist() for u in lazyscope.unbind(T(a), 1)] == [list(col) for col in a.T]
    close(lazyscope.vstack([T(v), T(w)]), np.vstack([v, w]))
    close(lazyscope.hstack([T(a), T(c)]), np.hstack([a, c]))
    for indexing in ("ij", "xy"):
        for got, want in zip(lazyscope.meshgrid(T(v), T(c[0]), indexing=indexing), np.meshgrid(v, c[0],
                                                                                             indexing=indexing)):
            close(got, want)
    close(lazyscope.roll(T(a), (1, -2), (0, 1)), np.roll(a, (1, -2), (0, 1)))
    close(lazyscope.roll(T(a), 5), np.roll(a, 5))
    close(lazyscope.trace(T(a)), np.trace(a))
    close(lazyscope.repeat_interleave(T(a), 2, dim=0), np.repeat(a, 2, axis=0))
    close(lazyscope.repeat_interleave(T(v), lazyscope.tensor([1, 0, 2, 3])), np.repeat(v, [1, 0, 2, 3]))
    close(lazyscope.lerp(T(v), T(w), 0.25), v + 0.25 * (w - v))
    close(lazyscope.tensordot(T(a), T(b), 1), np.tensordot(a, b, 1))
    close(lazyscope.tensordot(T(a), T(a), ([0, 1], [0, 1])), np.tensordot(a, a, ([0, 1], [0, 1])))
    var, mean = lazyscope.var_mean(T(a), 1)
    close(var, a.var(1, ddof=1))
    close(mean, a.mean(1))
    assert lazyscope.is_floating_point(T(a)) and not lazyscope.is_floating_point(lazyscope.tensor([1]))


# &, |, ^ (and in place, reversed with a Python bool, bitwise_* functions)
# on bool tensors: the mask idiom `(x > 0) & (y < 1)`, against NumPy;
# floats get a clear error naming the op and the line (integers:
# test_surface_bitwise.py).
@pytest.mark.parametrize("device", ["cpu", "lazy:0"])
def test_bitwise_ops_on_masks_match_numpy(device):
    rng = np.random.default_rng(4)
    a, b = rng.random(50) < 0.5, rng.random(50) < 0.3
    ta, tb = lazyscope.tensor(a, device=device), lazyscope.tensor(b, device=device)
    for got, want in [(ta & tb, a & b), (ta | tb, a | b), (ta ^ tb, a ^ b), (ta & True, a & True),
                      (False | ta, False | a), (True ^ ta, True ^ a), (lazyscope.bitwise_and(ta, tb), a & b),
                      (ta.bitwise_or(tb), a | b), (lazyscope.bitwise_xor(ta, tb), a ^ b),
                      (lazyscope.bitwise_not(ta), ~a)]:
        assert got.dtype == lazyscope.bool
        np.testing.assert_array_equal(got.numpy(), want)
    m = ta.clone()
    m &= tb
    m |= lazyscope.tensor(a & ~b, device=device)
    m ^= True
    np.testing.assert_array_equal(m.numpy(), ~((a & b) | (a & ~b)))
    x = lazyscope.tensor(rng.standard_normal(50).astype(np.float32), device=device)
    with pytest.raises(lazyscope.EngineError,
                       match=r"bitwise_and: expected integer or bool operands, got float32 and bool .*"
                             r"test_pytorch_surface.py:"):
        x & (x > 0)
    with pytest.raises(TypeError, match=r"bitwise_or: expected a tensor, a bool or an int, got float"):
        (x > 0) | 1.5
    mixed = (x > 0) | 1  # a mask with an int: integers, as PyTorch (and NumPy)
    assert mixed.dtype == lazyscope.int64
    np.testing.assert_array_equal(mixed.numpy(), (x.numpy() > 0) | 1)


def test_compile_returns_the_model_and_a_compiled_lazy_step_caches_as_before():
    """torch.compile is what a lazy device does already: compile() hands the
    module (or function, or a decorator) back; a lazy training step through
    it compiles once and then hits the cache."""
    from lazyscope.core import lazy_model as lm
    net = lazyscope.nn.Linear(3, 2)
    assert lazyscope.compile(net) is net
    assert lazyscope.compile(net, mode="max-autotune", fullgraph=True, dynamic=False) is net

    @lazyscope.compile(mode="reduce-overhead")
    def double(x):
        return x * 2

    np.testing.assert_array_equal(double(lazyscope.tensor([1.0, 2.0])).numpy(), [2.0, 4.0])
    assert lazyscope.compiler.disable(double) is double and not lazyscope.compiler.is_compiling()
    with pytest.raises(RuntimeError, match="unrecognized mode 'fastest'"):
        lazyscope.compile(net, mode="fastest")
    with pytest.raises(TypeError, match="expected a module or a function"):
        lazyscope.compile(3)
    dev = lm.lazy_device()
    model = lazyscope.compile(lazyscope.nn.Linear(3, 2).to(dev))
    opt = lazyscope.optim.SGD(model.parameters(), lr=0.1)
    x = lazyscope.tensor(np.ones((4, 3), np.float32), device=dev)
    lazyscope._C.clear_compile_cache()
    lazyscope._C.reset_metrics()
    for _ in range(3):
        opt.zero_grad()
        model(x).pow(2).sum().backward()
        lm.optimizer_step(opt, barrier=True)
    counters = lm.counters()
    assert counters["UncachedCompile"] == 1 and counters["CachedCompile"] == 2, counters


@pytest.mark.parametrize("device", ["cpu", "lazy:0"])
def test_where_with_the_condition_alone_is_nonzero_as_a_tuple(device):
    c = np.array([[True, False, True], [False, False, True]])
    got = lazyscope.where(lazyscope.tensor(c, device=device))
    want = np.nonzero(c)
    assert len(got) == 2
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w)
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(
        lazyscope.where(lazyscope.tensor(c, device=device), lazyscope.tensor(x, device=device), -1.0).numpy(),
        np.where(c, x, -1.0))
    with pytest.raises(TypeError, match="got one of input and other"):
        lazyscope.where(lazyscope.tensor(c), lazyscope.tensor(x))


def test_the_package_says_its_version():
    import pathlib
    import re as regex
    cmake = (pathlib.Path(__file__).resolve().parents[2] / "CMakeLists.txt").read_text()
    assert lazyscope.__version__ == regex.search(r"project\(LazyScope VERSION ([\d.]+)", cmake).group(1)
