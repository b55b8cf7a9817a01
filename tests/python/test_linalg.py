"""torch.linalg on LazyScope (lazyscope.linalg, LAPACK kernels) against
NumPy's linalg in float64: solve, inv, det/slogdet/logdet, cholesky,
solve_triangular, eigh, qr, svd and what is composed from them (pinv,
lstsq, matrix_rank, matrix_norm, matrix_power, cholesky_solve); batches,
broadcast batch dims, vector right-hand sides, left=False, float32;
gradients against central finite differences of NumPy's own functions
(sign-invariant losses where a decomposition's signs are arbitrary), on
both devices; errors for singular and indefinite matrices naming the op,
and on a lazy device before any parameter is overwritten."""
import math

import numpy as np
import pytest

import lazyscope
from lazyscope import linalg

DEVICES = ["cpu", "lazy:0"]


def rng(seed=0):
    return np.random.default_rng(seed)


def well_conditioned(r, *shape):
    """Random square matrices with a strong diagonal (condition number ~ a few)."""
    n = shape[-1]
    return r.standard_normal(shape) + 3 * n ** 0.5 * np.eye(n)


def spd(r, *shape):
    x = r.standard_normal(shape)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


def t(a, dev, grad=False):
    out = lazyscope.tensor(np.asarray(a), device=dev)
    return out.requires_grad_() if grad else out


def close(x, ref, tol=1e-10):
    got = x.numpy() if hasattr(x, "numpy") else np.asarray(x)
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


def fd_gradient(f, a, eps=1e-6):
    """Central differences of the NumPy scalar function f at a."""
    g = np.zeros_like(a)
    it = np.nditer(a, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        up, down = a.copy(), a.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)) / (2 * eps)
    return g


def engine_gradient(f, a, dev):
    x = t(a, dev, grad=True)
    loss = f(x)
    loss.backward()
    return x.grad.numpy()


# --- forward values ---------------------------------------------------------------------------

@pytest.mark.parametrize("dev", DEVICES)
def test_solve_inv_det_match_numpy_on_batches(dev):
    r = rng(1)
    a = well_conditioned(r, 3, 5, 5)
    b = r.standard_normal((3, 5, 2))
    close(linalg.solve(t(a, dev), t(b, dev)), np.linalg.solve(a, b))
    close(linalg.inv(t(a, dev)), np.linalg.inv(a))
    close(linalg.det(t(a, dev)), np.linalg.det(a), 1e-9)
    sign, logabs = linalg.slogdet(t(a, dev))
    ref_sign, ref_log = np.linalg.slogdet(a)
    close(sign, ref_sign)
    close(logabs, ref_log)
    close(lazyscope.det(t(a, dev)), np.linalg.det(a), 1e-9)
    close(lazyscope.inverse(t(a, dev)), np.linalg.inv(a))


@pytest.mark.parametrize("dev", DEVICES)
def test_solve_broadcasts_batches_takes_vectors_and_left_false(dev):
    r = rng(2)
    a = well_conditioned(r, 2, 1, 4, 4)
    b = r.standard_normal((3, 4, 2))
    close(linalg.solve(t(a, dev), t(b, dev)), np.linalg.solve(a, b[None]))  # batch [2, 1] with [3]
    v = r.standard_normal(4)
    a2 = well_conditioned(r, 4, 4)
    close(linalg.solve(t(a2, dev), t(v, dev)), np.linalg.solve(a2, v))
    vb = r.standard_normal((3, 4))
    a3 = well_conditioned(r, 3, 4, 4)
    close(linalg.solve(t(a3, dev), t(vb, dev)), np.linalg.solve(a3, vb[..., None])[..., 0])
    # X A = B
    bl = r.standard_normal((2, 4))
    close(linalg.solve(t(a2, dev), t(bl, dev), left=False), bl @ np.linalg.inv(a2))


@pytest.mark.parametrize("dev", DEVICES)
def test_determinant_signs_and_singular_matrices(dev):
    r = rng(3)
    a = well_conditioned(r, 4, 4)
    neg = a.copy()
    neg[[0, 1]] = neg[[1, 0]]  # one row swap: the sign flips
    for m in (a, neg):
        close(linalg.det(t(m, dev)), np.linalg.det(m), 1e-9)
    singular = np.ones((3, 3))
    sign, logabs = linalg.slogdet(t(singular, dev))
    assert sign.item() == 0 and logabs.item() == -math.inf
    assert linalg.det(t(singular, dev)).item() == 0
    s3 = spd(r, 3, 3)
    close(lazyscope.logdet(t(s3, dev)), np.linalg.slogdet(s3)[1])
    m = np.diag([-1.0, 2.0, 3.0])
    assert math.isnan(lazyscope.logdet(t(m, dev)).item())
    close(lazyscope.logdet(t(np.diag([1.0, 2.0, 3.0]), dev)), math.log(6.0))


@pytest.mark.parametrize("dev", DEVICES)
def test_cholesky_and_triangular_solves(dev):
    r = rng(4)
    s = spd(r, 2, 5, 5)
    low = np.linalg.cholesky(s)
    close(linalg.cholesky(t(s, dev)), low)
    close(linalg.cholesky(t(s, dev), upper=True), np.swapaxes(low, -1, -2))
    # Only the lower triangle is read.
    garbage_upper = np.tril(s) + np.triu(r.standard_normal(s.shape), 1)
    close(linalg.cholesky(t(garbage_upper, dev)), low)
    b = r.standard_normal((2, 5, 3))
    for upper in (False, True):
        tri = np.swapaxes(low, -1, -2) if upper else low
        close(linalg.solve_triangular(t(tri, dev), t(b, dev), upper=upper), np.linalg.solve(tri, b))
        bl = r.standard_normal((2, 3, 5))
        close(linalg.solve_triangular(t(tri, dev), t(bl, dev), upper=upper, left=False), bl @ np.linalg.inv(tri))
        unit = tri.copy()
        idx = np.arange(5)
        unit[..., idx, idx] = 7.0  # ignored: taken as ones
        ones_diag = tri.copy()
        ones_diag[..., idx, idx] = 1.0
        close(linalg.solve_triangular(t(unit, dev), t(b, dev), upper=upper, unitriangular=True),
              np.linalg.solve(ones_diag, b))
    close(linalg.cholesky_solve(t(b, dev), t(low, dev)), np.linalg.solve(s, b))
    close(lazyscope.cholesky_inverse(t(low[0], dev)), np.linalg.inv(s[0]))


@pytest.mark.parametrize("dev", DEVICES)
def test_eigh_reconstructs_and_matches_numpy_eigenvalues(dev):
    r = rng(5)
    s = spd(r, 3, 6, 6) - 4 * np.eye(6)  # some negative eigenvalues
    vals, vecs = linalg.eigh(t(s, dev))
    close(vals, np.linalg.eigvalsh(s))
    v = vecs.numpy()
    np.testing.assert_allclose(v @ (vals.numpy()[..., None] * np.swapaxes(v, -1, -2)), s, atol=1e-10)
    np.testing.assert_allclose(np.swapaxes(v, -1, -2) @ v, np.broadcast_to(np.eye(6), v.shape), atol=1e-12)
    # UPLO='U' reads the upper triangle only.
    upper_only = np.triu(s) + np.tril(r.standard_normal(s.shape), -1)
    close(linalg.eigvalsh(t(upper_only, dev), UPLO="U"), np.linalg.eigvalsh(s))
    with pytest.raises(ValueError, match="UPLO"):
        linalg.eigh(t(s, dev), UPLO="X")


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 4)])
def test_qr_and_svd_match_numpy(dev, shape):
    r = rng(6)
    a = r.standard_normal(shape)
    q, rr = linalg.qr(t(a, dev))
    ref_q, ref_r = np.linalg.qr(a)
    close(q, ref_q)
    close(rr, ref_r)
    qc, rc = linalg.qr(t(a, dev), mode="complete")
    ref_qc, ref_rc = np.linalg.qr(a, mode="complete")
    close(qc, ref_qc)
    close(rc, ref_rc)
    u, s, vh = linalg.svd(t(a, dev), full_matrices=False)
    close(s, np.linalg.svd(a, compute_uv=False))
    np.testing.assert_allclose((u.numpy() * s.numpy()[..., None, :]) @ vh.numpy(), a, atol=1e-12)
    uf, sf, vhf = linalg.svd(t(a, dev))  # full_matrices=True, PyTorch's default
    m, n = shape[-2:]
    assert tuple(uf.shape[-2:]) == (m, m) and tuple(vhf.shape[-2:]) == (n, n)
    np.testing.assert_allclose(np.swapaxes(uf.numpy(), -1, -2) @ uf.numpy(), np.broadcast_to(np.eye(m), uf.shape),
                               atol=1e-12)
    close(linalg.svdvals(t(a, dev)), np.linalg.svd(a, compute_uv=False))


@pytest.mark.parametrize("dev", DEVICES)
def test_composed_functions_match_numpy(dev):
    r = rng(7)
    a = r.standard_normal((5, 3))
    close(linalg.pinv(t(a, dev)), np.linalg.pinv(a))
    b = r.standard_normal((5, 2))
    close(linalg.lstsq(t(a, dev), t(b, dev)).solution, np.linalg.lstsq(a, b, rcond=None)[0])
    rank2 = r.standard_normal((6, 2)) @ r.standard_normal((2, 5))
    assert linalg.matrix_rank(t(rank2, dev)).item() == np.linalg.matrix_rank(rank2) == 2
    close(linalg.pinv(t(rank2, dev)), np.linalg.pinv(rank2), 1e-9)
    m = r.standard_normal((2, 4, 3))
    for ord in ("fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf):
        close(linalg.matrix_norm(t(m, dev), ord=ord), np.linalg.norm(m, ord=ord, axis=(-2, -1)))
    close(lazyscope.norm(t(m[0], dev), p="nuc"), np.linalg.norm(m[0], "nuc"))
    sq = well_conditioned(r, 3, 3) / 5
    for p in (0, 1, 3, 6, -2):
        close(linalg.matrix_power(t(sq, dev), p), np.linalg.matrix_power(sq, p), 1e-9)


@pytest.mark.parametrize("dev", DEVICES)
def test_float32_is_float32_and_accurate(dev):
    r = rng(8)
    a = well_conditioned(r, 6, 6).astype(np.float32)
    b = r.standard_normal((6, 2)).astype(np.float32)
    x = linalg.solve(t(a, dev), t(b, dev))
    assert x.dtype == lazyscope.float32
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a.astype(np.float64), b), rtol=1e-5, atol=1e-5)
    vals, _ = linalg.eigh(t(spd(r, 5, 5).astype(np.float32), dev))
    assert vals.dtype == lazyscope.float32


# --- gradients: finite differences of NumPy's functions ---------------------------------------

@pytest.mark.parametrize("dev", DEVICES)
def test_gradients_of_solve_inv_det(dev):
    r = rng(9)
    a = well_conditioned(r, 2, 4, 4)
    b = r.standard_normal((2, 4, 3))
    w = r.standard_normal((2, 4, 3))
    wi = r.standard_normal((2, 4, 4))
    # solve: both operands.
    ga = engine_gradient(lambda x: (linalg.solve(x, t(b, dev)) * t(w, dev)).sum(), a, dev)
    np.testing.assert_allclose(ga, fd_gradient(lambda m: (np.linalg.solve(m, b) * w).sum(), a), atol=1e-7)
    gb = engine_gradient(lambda x: (linalg.solve(t(a, dev), x) * t(w, dev)).sum(), b, dev)
    np.testing.assert_allclose(gb, fd_gradient(lambda m: (np.linalg.solve(a, m) * w).sum(), b), atol=1e-7)
    # X A = B (left=False): X = B A^-1.
    bt, wt = np.swapaxes(b, -1, -2), np.swapaxes(w, -1, -2)
    gl = engine_gradient(lambda x: (linalg.solve(x, t(bt, dev), left=False) * t(wt, dev)).sum(), a, dev)
    np.testing.assert_allclose(gl, fd_gradient(lambda m: ((bt @ np.linalg.inv(m)) * wt).sum(), a), atol=1e-7)
    gi = engine_gradient(lambda x: (linalg.inv(x) * t(wi, dev)).sum(), a, dev)
    np.testing.assert_allclose(gi, fd_gradient(lambda m: (np.linalg.inv(m) * wi).sum(), a), atol=1e-7)
    gd = engine_gradient(lambda x: (linalg.det(x) * t(np.array([0.7, -1.3]), dev)).sum(), a, dev)
    np.testing.assert_allclose(gd, fd_gradient(lambda m: (np.linalg.det(m) * np.array([0.7, -1.3])).sum(), a),
                               rtol=1e-6, atol=1e-5)
    gs = engine_gradient(lambda x: linalg.slogdet(x).logabsdet.sum(), a, dev)
    np.testing.assert_allclose(gs, fd_gradient(lambda m: np.linalg.slogdet(m)[1].sum(), a), atol=1e-7)


@pytest.mark.parametrize("dev", DEVICES)
def test_gradients_of_cholesky_and_triangular_solve(dev):
    r = rng(10)
    x0 = r.standard_normal((2, 4, 4))
    w = r.standard_normal((2, 4, 4))

    # A = X X^T + 4 I: symmetric whatever the perturbation, so the
    # gradient with respect to X is independent of which triangle is read.
    def np_chol(xm):
        return np.linalg.cholesky(xm @ np.swapaxes(xm, -1, -2) + 4 * np.eye(4))

    for upper in (False, True):
        def f(x, upper=upper):
            eye = lazyscope.eye(4, dtype=x.dtype, device=x.device)
            return (linalg.cholesky(x @ x.mT + eye * 4, upper=upper) * t(w, dev)).sum()

        def ref(xm, upper=upper):
            c = np_chol(xm)
            return ((np.swapaxes(c, -1, -2) if upper else c) * w).sum()

        np.testing.assert_allclose(engine_gradient(f, x0, dev), fd_gradient(ref, x0), atol=1e-7)
    low = np.tril(r.standard_normal((2, 4, 4))) + 4 * np.eye(4)
    b = r.standard_normal((2, 4, 3))
    wb = r.standard_normal((2, 4, 3))
    for upper in (False, True):
        tri = np.swapaxes(low, -1, -2) if upper else low
        mask = np.triu(np.ones((4, 4))) if upper else np.tril(np.ones((4, 4)))
        ga = engine_gradient(lambda x: (linalg.solve_triangular(x, t(b, dev), upper=upper) * t(wb, dev)).sum(),
                             tri, dev)
        ref = fd_gradient(lambda m: (np.linalg.solve(m * mask, b) * wb).sum(), tri)
        np.testing.assert_allclose(ga, ref, atol=1e-7)
        gb = engine_gradient(lambda x: (linalg.solve_triangular(t(tri, dev), x, upper=upper) * t(wb, dev)).sum(),
                             b, dev)
        np.testing.assert_allclose(gb, fd_gradient(lambda m: (np.linalg.solve(tri, m) * wb).sum(), b), atol=1e-7)


@pytest.mark.parametrize("dev", DEVICES)
def test_gradient_of_eigh_through_a_sign_invariant_loss(dev):
    r = rng(11)
    x0 = r.standard_normal((2, 4, 4))
    wv = r.standard_normal((2, 4, 4))
    c = r.standard_normal(4)
    wl = r.standard_normal((2, 4))

    # loss = sum(wl * L) + sum(wv * (V diag(c) V^T)): each eigenvector's
    # sign cancels. A = X + X^T keeps A symmetric under any perturbation.
    def f(x):
        vals, vecs = linalg.eigh(x + x.mT)
        return (vals * t(wl, dev)).sum() + ((vecs * t(c, dev)) @ vecs.mT * t(wv, dev)).sum()

    def ref(xm):
        vals, vecs = np.linalg.eigh(xm + np.swapaxes(xm, -1, -2))
        return (vals * wl).sum() + (((vecs * c) @ np.swapaxes(vecs, -1, -2)) * wv).sum()

    np.testing.assert_allclose(engine_gradient(f, x0, dev), fd_gradient(ref, x0), atol=1e-6)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("shape", [(5, 3), (4, 4)])
def test_gradient_of_qr(dev, shape):
    r = rng(12)
    a = r.standard_normal(shape)
    k = min(shape)
    wq, wr = r.standard_normal((shape[0], k)), r.standard_normal((k, shape[1]))

    def f(x):
        q, rr = linalg.qr(x)
        return (q * t(wq, dev)).sum() + (rr * t(wr, dev)).sum()

    def ref(m):
        q, rr = np.linalg.qr(m)
        return (q * wq).sum() + (rr * wr).sum()

    np.testing.assert_allclose(engine_gradient(f, a, dev), fd_gradient(ref, a), atol=1e-6)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_gradient_of_svd_through_a_sign_invariant_loss(dev, shape):
    r = rng(13)
    a = r.standard_normal(shape)
    k = min(shape)
    w1, ws = r.standard_normal(shape), r.standard_normal(k)
    c = r.standard_normal(k)
    wu = r.standard_normal((shape[0], shape[0]))

    # Pairs u_i v_i^T, u_i u_i^T and the values: invariant to each pair's sign.
    def f(x):
        u, s, vh = linalg.svd(x, full_matrices=False)
        return ((u * t(c, dev)) @ vh * t(w1, dev)).sum() + (s * t(ws, dev)).sum() + \
            ((u * t(c, dev)) @ u.mT * t(wu, dev)).sum()

    def ref(m):
        u, s, vh = np.linalg.svd(m, full_matrices=False)
        return (((u * c) @ vh) * w1).sum() + (s * ws).sum() + (((u * c) @ u.T) * wu).sum()

    np.testing.assert_allclose(engine_gradient(f, a, dev), fd_gradient(ref, a), atol=1e-6)
    # pinv's gradient goes through the SVD's too.
    wp = r.standard_normal(shape[::-1])
    np.testing.assert_allclose(engine_gradient(lambda x: (linalg.pinv(x) * t(wp, dev)).sum(), a, dev),
                               fd_gradient(lambda m: (np.linalg.pinv(m) * wp).sum(), a), atol=1e-6)


# --- errors --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dev", DEVICES)
def test_singular_and_indefinite_matrices_are_errors_naming_the_op(dev):
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(Exception, match=r"linalg.solve: the matrix is singular"):
        linalg.solve(t(singular, dev), t(np.ones((2, 1)), dev)).numpy()
    with pytest.raises(Exception, match=r"linalg.inv: the matrix is singular"):
        linalg.inv(t(np.stack([np.eye(2), singular]), dev)).numpy()
    with pytest.raises(Exception, match=r"batch element 1"):
        linalg.inv(t(np.stack([np.eye(2), singular]), dev)).numpy()
    with pytest.raises(Exception, match=r"linalg.cholesky: the input is not positive-definite: the leading minor "
                                        r"of order 2"):
        linalg.cholesky(t(np.array([[1.0, 2.0], [2.0, 1.0]]), dev)).numpy()


def test_bad_shapes_and_dtypes_are_clear_errors():
    a = lazyscope.tensor(np.ones((3, 4)))
    with pytest.raises(ValueError, match="linalg.inv: expected square matrices, got shape \\[3, 4\\]"):
        linalg.inv(a)
    with pytest.raises(ValueError, match="linalg.solve"):
        linalg.solve(lazyscope.tensor(np.eye(3)), lazyscope.tensor(np.ones((4, 2))))
    with pytest.raises(TypeError, match="float32 or float64"):
        linalg.det(lazyscope.tensor(np.eye(3, dtype=np.int64)))
    with pytest.raises(ValueError, match="batch dims"):
        linalg.solve(lazyscope.tensor(np.ones((2, 3, 3))), lazyscope.tensor(np.ones((4, 3, 1))))
    with pytest.raises(ValueError, match="mode"):
        linalg.qr(lazyscope.tensor(np.ones((3, 3))), mode="full")


def test_a_failed_factorization_in_a_lazy_step_names_the_op_and_the_users_line():
    """A training step whose graph holds a Cholesky of an indefinite matrix
    fails at its sync with the op's message, once (no prefix repeated), and
    the line that traced the op; the next step (a good matrix) runs."""
    from lazyscope.core import lazy_model as lm
    dev = lm.lazy_device()
    w = lazyscope.nn.Parameter(lazyscope.tensor(np.array([[1.0, 2.0], [2.0, 1.0]]), device=dev))
    opt = lazyscope.optim.SGD([w], lr=0.1)
    linalg.cholesky(w).sum().backward()
    with pytest.raises(Exception) as failure:
        lm.optimizer_step(opt, barrier=True)
    message = str(failure.value)
    assert message.startswith("linalg.cholesky: the input is not positive-definite: the leading minor of order 2")
    assert "test_linalg.py" in message and message.count("linalg.cholesky") == 1, message
    good = lazyscope.nn.Parameter(lazyscope.tensor(np.array([[4.0, 2.0], [2.0, 3.0]]), device=dev))
    np.testing.assert_allclose(linalg.cholesky(good).detach().cpu().numpy(), np.linalg.cholesky([[4.0, 2.0],
                                                                                                 [2.0, 3.0]]))


def test_a_least_squares_fit_trains_on_a_lazy_device_like_on_cpu():
    """Ridge regression's closed form inside a training step (solve of X^T X
    + lambda I) and its gradient, on lazy:0 against cpu and NumPy."""
    r = rng(14)
    x = r.standard_normal((20, 3))
    y = x @ np.array([1.0, -2.0, 0.5]) + 0.01 * r.standard_normal(20)
    from lazyscope.core import lazy_model as lm
    results = {}
    for dev in ("cpu", lm.lazy_device()):
        lam = lazyscope.nn.Parameter(lazyscope.tensor(np.array(0.5), device=dev))
        opt = lazyscope.optim.SGD([lam], lr=0.01)
        X, Y = t(x, dev), t(y, dev)
        for _ in range(3):
            opt.zero_grad()
            eye = lazyscope.eye(3, dtype=X.dtype, device=X.device)
            beta = linalg.solve(X.mT @ X + lam * eye, X.mT @ Y)
            loss = ((X @ beta - Y) ** 2).mean()
            loss.backward()
            if str(dev) == "cpu":
                opt.step()
            else:
                lm.optimizer_step(opt, barrier=True)
        results[str(dev)] = lam.detach().cpu().numpy()
    # NumPy: the same three steps with the finite-difference gradient.
    lam = 0.5
    for _ in range(3):
        def loss_of(v):
            beta = np.linalg.solve(x.T @ x + v * np.eye(3), x.T @ y)
            return ((x @ beta - y) ** 2).mean()
        lam -= 0.01 * (loss_of(lam + 1e-6) - loss_of(lam - 1e-6)) / 2e-6
    for got in results.values():
        np.testing.assert_allclose(got, lam, rtol=1e-7)


def test_the_program_listing_estimates_factorization_flops():
    """The Kernels view's GFLOP/s come from these estimates: LU 2/3 n^3 +
    2 n^2 k for a solve, Cholesky 1/3 n^3, per matrix of the batch."""
    import re
    from runtime_util import run_graph
    r = rng(15)
    a = t(well_conditioned(r, 3, 6, 6), "lazy:0")
    b = t(r.standard_normal((3, 6, 2)), "lazy:0")
    s = t(spd(r, 6, 6), "lazy:0")
    _, program = run_graph(lambda: (linalg.solve(a, b), linalg.cholesky(s)), require_compile=True)
    assert re.search(r"= linalg\.solve\(.*flops=%d " % (3 * (2 * 6 ** 3 // 3 + 2 * 36 * 2)), program), program
    assert re.search(r"= linalg\.cholesky\(.*flops=%d " % (6 ** 3 // 3), program), program
