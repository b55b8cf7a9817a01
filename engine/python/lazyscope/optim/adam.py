"""Adam and AdamW (torch.optim's rules, with amsgrad)."""
import math

import lazyscope
from lazyscope import _C
from lazyscope.optim.optimizer import Optimizer


def _zeros_like(p):
    return lazyscope.zeros(*p.shape, dtype=p.dtype, device=p.device)


class Adam(Optimizer):
    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 maximize=False, foreach=None):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {b}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize, foreach=foreach))

    @staticmethod
    def _advance(p, state, group):
        """Makes the state on a parameter's first step and counts the step."""
        if not state:
            # Zero moments as device data: the first step traces the same graph
            # as every later one.
            state["step"] = 0
            state["exp_avg"] = _zeros_like(p)
            state["exp_avg_sq"] = _zeros_like(p)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = _zeros_like(p)
        state["step"] += 1
        return state["step"]

    def _step_group(self, group):
        # foreach (the default, as PyTorch's foreach=None on its devices): the
        # group's update traced by one C++ call (_C._adam_step), the same ops
        # in the same order as _update's, where the Python loop crossed into
        # C++ ~10 times per parameter. A subclass overriding _update keeps
        # its own rule.
        if group.get("foreach") is False or type(self)._update is not Adam._update:
            return super()._step_group(group)
        params = [p for p in group["params"] if p.grad is not None]
        if not params:
            return
        lr, wd, eps = group["lr"], group["weight_decay"], group["eps"]
        beta1, beta2 = group["betas"]
        amsgrad = group["amsgrad"]
        exp_avgs, exp_avg_sqs, maxes, inv_bias2_sqrts, neg_step_sizes = [], [], [] if amsgrad else None, [], []
        for p in params:
            state = self.state[p]
            step = self._advance(p, state, group)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            if amsgrad:
                maxes.append(state["max_exp_avg_sq"])
            # The numbers _update makes of the step count, as it makes them.
            inv_bias2_sqrts.append(1.0 / math.sqrt(1 - beta2 ** step))
            neg_step_sizes.append(-(lr / (1 - beta1 ** step)))
        coupled = wd != 0 and not self._decoupled
        decoupled = wd != 0 and self._decoupled
        _C._adam_step(params, exp_avgs, exp_avg_sqs, maxes, inv_bias2_sqrts, neg_step_sizes, beta1, 1 - beta1, beta2,
                      1 - beta2, eps, wd if coupled else None, 1 - lr * wd if decoupled else None, group["maximize"])

    def _update(self, p, g, state, group):
        if group["maximize"]:
            g = -g
        lr, wd, eps = group["lr"], group["weight_decay"], group["eps"]
        beta1, beta2 = group["betas"]
        step = self._advance(p, state, group)
        if wd != 0:
            if self._decoupled:
                p.mul_(1 - lr * wd)
            else:
                g = g + p * wd
        # torch.optim.Adam's rule, in place on the moments and the parameter.
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.mul_(beta1).add_(g, alpha=1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        # The bias corrections change every step; as Python numbers they are
        # graph inputs, so they do not recompile.
        bias1 = 1 - beta1 ** step
        bias2_sqrt = math.sqrt(1 - beta2 ** step)
        second = exp_avg_sq
        if group["amsgrad"]:
            second = state["max_exp_avg_sq"]
            second.copy_(lazyscope.maximum(second, exp_avg_sq))
        denom = (second.sqrt() * (1.0 / bias2_sqrt)).add_(eps)
        p.addcdiv_(exp_avg, denom, value=-(lr / bias1))


class AdamW(Adam):
    """Adam with decoupled weight decay: p ← p·(1 − lr·wd) before the Adam step."""
    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize, foreach=foreach)
