"""L-BFGS (torch.optim.LBFGS's algorithm): the two-loop recursion over the
last ``history_size`` curvature pairs, a fixed step or a strong-Wolfe line
search (cubic interpolation, the zoom of Nocedal & Wright's algorithms 3.5
and 3.6), and PyTorch's stopping rules.

Host reads. The algorithm branches on values (the loss, the largest
gradient element, y·s, the directional derivative), so on a lazy device
each decision is a read, as on PyTorch/XLA. They are batched: one read
after each closure evaluation (the loss, max |g|, and y·s and y·y for the
curvature pair the new gradient completes) and one per iteration after the
direction is computed (g·d, max |d|, and sum |g| for the first step's
length). The directions, the history and the parameter updates stay on
the device; the history's length grows to ``history_size``, so the first
iterations trace graphs of different sizes (one compile each, as on
PyTorch/XLA).
"""
from copy import deepcopy

import lazyscope
from lazyscope.nn.parameter import Tensor
from lazyscope.optim.optimizer import Optimizer


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimizer of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to bounds (the
    interval's midpoint when the cubic has none): PyTorch's _cubic_interpolate, on Python floats."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = d2_square ** 0.5
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _read(*scalars):
    """The values of 0-d tensors (or numbers) as Python floats, in one read."""
    tensors = [s for s in scalars if isinstance(s, Tensor)]
    if not tensors:
        return [float(s) for s in scalars]
    values = iter(lazyscope.stack([t.reshape(()).to(lazyscope.float64) for t in tensors]).tolist())
    return [next(values) if isinstance(s, Tensor) else float(s) for s in scalars]


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, d_norm, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """PyTorch's _strong_wolfe: (loss, flat gradient, step, evaluations). obj_func(x, t, d) gives
    (loss, flat gradient, g·d) as floats and a tensor; f, gtd and d_norm are floats."""
    g = g.clone()
    f_new, g_new, gtd_new = obj_func(x, t, d)
    ls_func_evals = 1
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        # Armijo violated, or no decrease since the last trial: the minimum is bracketed.
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.clone()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:  # strong Wolfe holds
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.clone()], [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.clone(), gtd_new
        f_new, g_new, gtd_new = obj_func(x, t, d)
        ls_func_evals += 1
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g, bracket_gtd = [0, t], [f, f_new], [g, g_new], [gtd, gtd_new]

    # Zoom until the bracket holds a point satisfying strong Wolfe or is too small.
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        # A trial too close to the bracket's ends makes little progress: move it inside by 10%.
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) else min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new, gtd_new = obj_func(x, t, d)
        ls_func_evals += 1
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new.clone(), gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos], bracket_gtd[high_pos] = bracket_g[low_pos], bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new.clone(), gtd_new
    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


class LBFGS(Optimizer):
    """torch.optim.LBFGS: ``step(closure)`` runs up to ``max_iter`` iterations (``max_eval``
    closure evaluations, default max_iter * 5 // 4) and returns the closure's first loss. One
    parameter group only, as PyTorch. See the module's docstring for the host reads a lazy
    device makes."""

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_iter < 1:
            raise ValueError(f"Invalid max_iter: {max_iter} (at least 1)")
        if history_size < 1:
            raise ValueError(f"Invalid history_size: {history_size} (at least 1)")
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got {line_search_fn!r}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change, history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def add_param_group(self, param_group):
        if self.param_groups:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        super().add_param_group(param_group)

    def _gather_flat_grad(self):
        return lazyscope.cat([lazyscope.zeros(p.numel(), dtype=p.dtype, device=p.device) if p.grad is None
                              else p.grad.reshape(-1) for p in self._params])

    def _add_grad(self, step_size, update):
        offset = 0
        for p in self._params:
            n = p.numel()
            p.add_(update[offset:offset + n].view_as(p), alpha=step_size)
            offset += n

    def _evaluate(self, closure):
        """Runs the closure; (loss, flat gradient) with the loss a Python float."""
        with lazyscope.enable_grad():
            loss = closure()
        return loss, self._gather_flat_grad()

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss, flat_grad = self._evaluate(closure)
        f, gtd = _read(loss, flat_grad.dot(d))
        for p, saved in zip(self._params, x):
            p.copy_(saved)
        return f, flat_grad, gtd

    def step(self, closure=None):
        if closure is None:
            raise RuntimeError("LBFGS.step needs a closure that clears the gradients, computes the loss, calls "
                               "backward() and returns the loss")
        with lazyscope.no_grad():
            return self._step(closure)

    def _step(self, closure):
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss, flat_grad = self._evaluate(closure)
        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag, prev_flat_grad, prev_loss = state.get("H_diag"), state.get("prev_flat_grad"), state.get("prev_loss")
        # One read: the loss, the optimality test and the curvature pair the new gradient completes.
        y = s = None
        if state["n_iter"] > 0 and prev_flat_grad is not None:
            y, s = flat_grad - prev_flat_grad, d * t
            loss, gmax, ys, yy = _read(orig_loss, flat_grad.abs().max(), y.dot(s), y.dot(y))
        else:
            loss, gmax = _read(orig_loss, flat_grad.abs().max())
        current_evals = 1
        state["func_evals"] += 1
        if gmax <= tolerance_grad:
            return orig_loss

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                if ys > 1e-10:  # keep the pair only where the curvature condition holds
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / yy
                # The two-loop recursion: d = -H g with H the L-BFGS inverse Hessian.
                al = [None] * len(old_dirs)
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q = q - old_dirs[i] * al[i]
                r = q * H_diag
                for i in range(len(old_dirs)):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    r = r + old_stps[i] * (al[i] - be_i)
                d = r
            prev_flat_grad = flat_grad.clone()
            prev_loss = loss

            gtd, dmax, gsum = _read(flat_grad.dot(d), d.abs().max(), flat_grad.abs().sum())
            t = min(1.0, 1.0 / gsum) * lr if state["n_iter"] == 1 else lr
            if gtd > -tolerance_change:  # not a descent direction
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                x_init = [p.clone() for p in self._params]

                def obj_func(x, step, direction):
                    return self._directional_evaluate(closure, x, step, direction)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(obj_func, x_init, t, d, loss, flat_grad, gtd,
                                                                  dmax)
                self._add_grad(t, d)
                y, s = flat_grad - prev_flat_grad, d * t
                gmax, ys, yy = _read(flat_grad.abs().max(), y.dot(s), y.dot(y))
                opt_cond = gmax <= tolerance_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    loss_t, flat_grad = self._evaluate(closure)
                    y, s = flat_grad - prev_flat_grad, d * t
                    loss, gmax, ys, yy = _read(loss_t, flat_grad.abs().max(), y.dot(s), y.dot(y))
                    opt_cond = gmax <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if dmax * abs(t) <= tolerance_change:  # max |d t|: the step is too small
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss

    def load_state_dict(self, state_dict):
        # The history is lists of tensors: copied onto the parameters' device, so the two
        # optimizers never share a tensor or a list that a later step changes in place.
        def moved(v):
            if isinstance(v, Tensor):
                return v.detach().to(self._params[0].device).clone()
            if isinstance(v, list):
                return [moved(e) for e in v]
            return deepcopy(v)
        saved = dict(state_dict)
        saved["state"] = {k: {name: moved(v) for name, v in entry.items()} for k, entry in state_dict["state"].items()}
        super().load_state_dict(saved)
