"""optim.LBFGS against a NumPy transcription of PyTorch's L-BFGS (torch/optim/lbfgs.py's published
algorithm: the two-loop recursion, the first step's length min(1, 1/|g|_1) lr, the strong-Wolfe line
search with cubic interpolation and zoom, and its stopping rules), written here on float64 vectors:
the iterates match step by step, with and without the line search; and it finds the known optimum of
the Rosenbrock function and of a least-squares problem (NumPy's lstsq)."""
import numpy as np
import pytest

import lazyscope
from lazyscope import optim

DEVICES = ["cpu", "lazy:0"]


# --- the reference: PyTorch's L-BFGS on a flat float64 vector ---------------------------------

def _cubic(x1, f1, g1, x2, f2, g2, bounds=None):
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2sq = d1 * d1 - g1 * g2
    if d2sq < 0:
        return (lo + hi) / 2
    d2 = np.sqrt(d2sq)
    if x1 <= x2:
        m = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        m = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(m, lo), hi)


def _wolfe(fg, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tol=1e-9, max_ls=25):
    dn = np.abs(d).max()
    f_new, g_new = fg(x + t * d)
    evals, gtd_new = 1, g_new @ d
    tp, fp, gp, gtdp = 0.0, f, g, gtd
    done, it = False, 0
    while it < max_ls:
        if f_new > f + c1 * t * gtd or (it > 1 and f_new >= fp):
            br, bf, bg, bgtd = [tp, t], [fp, f_new], [gp, g_new], [gtdp, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            br, bf, bg, done = [t], [f_new], [g_new], True
            break
        if gtd_new >= 0:
            br, bf, bg, bgtd = [tp, t], [fp, f_new], [gp, g_new], [gtdp, gtd_new]
            break
        tmp = t
        t = _cubic(tp, fp, gtdp, t, f_new, gtd_new, bounds=(t + 0.01 * (t - tp), t * 10))
        tp, fp, gp, gtdp = tmp, f_new, g_new, gtd_new
        f_new, g_new = fg(x + t * d)
        evals, gtd_new, it = evals + 1, g_new @ d, it + 1
    if it == max_ls:
        br, bf, bg, bgtd = [0, t], [f, f_new], [g, g_new], [gtd, gtd_new]
    insuf = False
    lo, hi = (0, 1) if bf[0] <= bf[-1] else (1, 0)
    while not done and it < max_ls:
        if abs(br[1] - br[0]) * dn < tol:
            break
        t = _cubic(br[0], bf[0], bgtd[0], br[1], bf[1], bgtd[1])
        eps = 0.1 * (max(br) - min(br))
        if min(max(br) - t, t - min(br)) < eps:
            if insuf or t >= max(br) or t <= min(br):
                t = max(br) - eps if abs(t - max(br)) < abs(t - min(br)) else min(br) + eps
                insuf = False
            else:
                insuf = True
        else:
            insuf = False
        f_new, g_new = fg(x + t * d)
        evals, gtd_new, it = evals + 1, g_new @ d, it + 1
        if f_new > f + c1 * t * gtd or f_new >= bf[lo]:
            br[hi], bf[hi], bg[hi], bgtd[hi] = t, f_new, g_new, gtd_new
            lo, hi = (0, 1) if bf[0] <= bf[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (br[hi] - br[lo]) >= 0:
                br[hi], bf[hi], bg[hi], bgtd[hi] = br[lo], bf[lo], bg[lo], bgtd[lo]
            br[lo], bf[lo], bg[lo], bgtd[lo] = t, f_new, g_new, gtd_new
    return bf[lo], bg[lo], br[lo], evals


class RefLBFGS:
    def __init__(self, lr=1.0, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        self.lr, self.max_iter = lr, max_iter
        self.max_eval = max_eval if max_eval is not None else max_iter * 5 // 4
        self.tg, self.tc, self.m, self.ls = tolerance_grad, tolerance_change, history_size, line_search_fn
        self.n_iter = self.func_evals = 0
        self.d = self.t = self.prev_g = self.prev_loss = None

    def step(self, x, fg):
        """x updated in place; returns the first loss."""
        loss, g = fg(x)
        orig, evals = loss, 1
        self.func_evals += 1
        if np.abs(g).max() <= self.tg:
            return orig
        n = 0
        while n < self.max_iter:
            n += 1
            self.n_iter += 1
            if self.n_iter == 1:
                d = -g
                self.S, self.Y, self.ro, self.H = [], [], [], 1.0
            else:
                y, s = g - self.prev_g, self.d * self.t
                ys = y @ s
                if ys > 1e-10:
                    if len(self.Y) == self.m:
                        self.Y.pop(0), self.S.pop(0), self.ro.pop(0)
                    self.Y.append(y), self.S.append(s), self.ro.append(1 / ys)
                    self.H = ys / (y @ y)
                al = [0.0] * len(self.Y)
                q = -g
                for i in reversed(range(len(self.Y))):
                    al[i] = (self.S[i] @ q) * self.ro[i]
                    q = q - al[i] * self.Y[i]
                r = q * self.H
                for i in range(len(self.Y)):
                    r = r + self.S[i] * (al[i] - (self.Y[i] @ r) * self.ro[i])
                d = r
            self.prev_g, self.prev_loss, self.d = g.copy(), loss, d
            t = min(1.0, 1.0 / np.abs(g).sum()) * self.lr if self.n_iter == 1 else self.lr
            self.t = t
            gtd = g @ d
            if gtd > -self.tc:
                break
            ls_evals, opt = 0, False
            if self.ls == "strong_wolfe":
                loss, g, t, ls_evals = _wolfe(fg, x.copy(), t, d, loss, g, gtd)
                self.t = t
                x += t * d
                opt = np.abs(g).max() <= self.tg
            else:
                x += t * d
                if n != self.max_iter:
                    loss, g = fg(x)
                    opt, ls_evals = np.abs(g).max() <= self.tg, 1
            evals += ls_evals
            self.func_evals += ls_evals
            if n == self.max_iter or evals >= self.max_eval or opt:
                break
            if np.abs(d * t).max() <= self.tc or abs(loss - self.prev_loss) < self.tc:
                break
        return orig


# --- problems ----------------------------------------------------------------------------------

def rosen_np(x):
    f = np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return f, g


def rosen_ls(x):
    return (100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def closure_for(opt, params, loss_fn, count=None):
    def closure():
        opt.zero_grad()
        loss = loss_fn(*params)
        loss.backward()
        if count is not None:
            count[0] += 1
        return loss
    return closure


X0 = np.array([-1.2, 1.0, -0.5, 0.8])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_iterates_match_the_numpy_transcription(device, line_search):
    kwargs = dict(lr=1.0 if line_search else 0.05, max_iter=6, history_size=3, line_search_fn=line_search)
    x = lazyscope.tensor(X0.copy(), device=device, requires_grad=True)
    opt = optim.LBFGS([x], **kwargs)
    ref, xr = RefLBFGS(**kwargs), X0.copy()
    closure = closure_for(opt, [x], rosen_ls)
    for _ in range(4):
        got_loss = float(opt.step(closure))
        want_loss = ref.step(xr, rosen_np)
        np.testing.assert_allclose(got_loss, want_loss, rtol=1e-10)
        np.testing.assert_allclose(x.detach().cpu().numpy(), xr, rtol=1e-9, atol=1e-12)
    state = opt.state[x]
    assert state["n_iter"] == ref.n_iter and state["func_evals"] == ref.func_evals
    assert len(state["old_dirs"]) == min(3, len(ref.Y)) == len(ref.Y)
    # A problem that moved: the trajectory is not trivially the start.
    assert np.abs(xr - X0).max() > 0.1


@pytest.mark.parametrize("device", DEVICES)
def test_rosenbrock_reaches_its_minimum_at_ones(device):
    x = lazyscope.tensor(np.array([-1.5, 2.0]), device=device, requires_grad=True)
    opt = optim.LBFGS([x], lr=1, max_iter=200, line_search_fn="strong_wolfe", tolerance_grad=1e-12,
                      tolerance_change=1e-15)
    opt.step(closure_for(opt, [x], rosen_ls))
    np.testing.assert_allclose(x.detach().cpu().numpy(), [1.0, 1.0], atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_least_squares_reaches_the_lstsq_solution(device, line_search):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((30, 5)), rng.standard_normal(30)
    want = np.linalg.lstsq(a, b, rcond=None)[0]
    A, B = lazyscope.tensor(a, device=device), lazyscope.tensor(b, device=device)
    w = lazyscope.zeros(4, dtype=lazyscope.float64, device=device).requires_grad_()
    c = lazyscope.zeros(1, dtype=lazyscope.float64, device=device).requires_grad_()  # two parameters
    opt = optim.LBFGS([w, c], lr=1 if line_search else 0.5, max_iter=100, line_search_fn=line_search,
                      tolerance_grad=1e-11, tolerance_change=1e-14)

    def loss_fn(w, c):
        return ((A @ lazyscope.cat([w, c]) - B) ** 2).sum() * 0.5

    for _ in range(3):
        opt.step(closure_for(opt, [w, c], loss_fn))
    got = np.concatenate([w.detach().cpu().numpy(), c.detach().cpu().numpy()])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("device", DEVICES)
def test_max_eval_bounds_the_closure_calls_and_the_first_loss_is_returned(device):
    x = lazyscope.tensor(X0.copy(), device=device, requires_grad=True)
    opt = optim.LBFGS([x], max_iter=10, max_eval=4, line_search_fn="strong_wolfe")
    count = [0]
    closure = closure_for(opt, [x], rosen_ls, count)
    first = float(rosen_ls(lazyscope.tensor(X0)))
    assert float(opt.step(closure)) == pytest.approx(first, rel=1e-12)
    ref = RefLBFGS(max_iter=10, max_eval=4, line_search_fn="strong_wolfe")
    ref.step(X0.copy(), rosen_np)
    assert count[0] == ref.func_evals == opt.state[x]["func_evals"]


@pytest.mark.parametrize("device", DEVICES)
def test_state_dict_round_trip_continues_the_same_trajectory(device):
    kwargs = dict(lr=0.1, max_iter=3, history_size=4)
    x = lazyscope.tensor(X0.copy(), device=device, requires_grad=True)
    opt = optim.LBFGS([x], **kwargs)
    closure = closure_for(opt, [x], rosen_ls)
    opt.step(closure)
    opt.step(closure)
    saved = opt.state_dict()
    ref = RefLBFGS(**kwargs)
    xr = X0.copy()
    ref.step(xr, rosen_np), ref.step(xr, rosen_np)
    assert saved["param_groups"][0]["history_size"] == 4 and saved["state"][0]["n_iter"] == ref.n_iter > 2
    x2 = lazyscope.tensor(x.detach().cpu().numpy(), device=device, requires_grad=True)
    opt2 = optim.LBFGS([x2], lr=1.0, max_iter=1, history_size=100)
    opt2.load_state_dict(saved)
    assert opt2.param_groups[0]["lr"] == 0.1 and opt2.param_groups[0]["history_size"] == 4
    closure2 = closure_for(opt2, [x2], rosen_ls)
    for _ in range(2):
        opt.step(closure)
        opt2.step(closure2)
    np.testing.assert_array_equal(x2.detach().cpu().numpy(), x.detach().cpu().numpy())
    # The loaded history is a copy, not the first optimizer's tensors.
    assert opt2.state[x2]["old_dirs"][0] is not opt.state[x]["old_dirs"][0]


def test_bad_arguments_are_refused_by_name():
    x = lazyscope.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="line_search_fn"):
        optim.LBFGS([x], line_search_fn="backtracking")
    with pytest.raises(ValueError, match="parameter groups"):
        optim.LBFGS([{"params": [x]}, {"params": [lazyscope.zeros(1, requires_grad=True)]}])
    with pytest.raises(RuntimeError, match="closure"):
        optim.LBFGS([x]).step()


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_host_reads_on_a_lazy_device_are_the_documented_ones(line_search):
    # One read per closure evaluation and one per iteration (g.d), plus, after a line search,
    # one for the new gradient's max and curvature pair: nothing else syncs.
    from lazyscope import _C
    from lazyscope.core import lazy_model as lm
    x = lazyscope.tensor(X0.copy(), device="lazy:0", requires_grad=True)
    opt = optim.LBFGS([x], lr=1 if line_search else 0.05, max_iter=4, line_search_fn=line_search)
    closure = closure_for(opt, [x], rosen_ls)
    opt.step(closure)
    state = opt.state[x]
    iters, evals = state["n_iter"], state["func_evals"]
    _C.reset_metrics()
    opt.step(closure)
    iters, evals = state["n_iter"] - iters, state["func_evals"] - evals
    assert iters == 4
    counters = lm.counters()
    per_iteration = 2 if line_search else 1
    assert counters["ExecuteCount"] == counters["SyncCause.to_host"] == evals + per_iteration * iters
