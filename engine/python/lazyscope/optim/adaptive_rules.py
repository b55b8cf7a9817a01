"""Adamax, NAdam, RAdam and Adadelta (torch.optim's rules, as PyTorch
documents them). Their step-count factors are Python numbers: graph inputs,
so a new step does not recompile (RAdam traces a second graph once, when its
rectification turns on)."""
import math

import lazyscope
from lazyscope.optim.optimizer import Optimizer


def _zeros_like(p):
    return lazyscope.zeros(*p.shape, dtype=p.dtype, device=p.device)


def _check(name, value):
    if value < 0.0:
        raise ValueError(f"Invalid {name}: {value}")


def _check_betas(betas):
    for i, b in enumerate(betas):
        if not 0.0 <= b < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {b}")


class Adamax(Optimizer):
    """m ← β1·m + (1 − β1)·g; u ← max(β2·u, |g| + eps); p −= lr/(1 − β1^t) · m/u (g with coupled weight decay)."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, *, maximize=False):
        _check("learning rate", lr)
        _check("epsilon value", eps)
        _check("weight_decay value", weight_decay)
        _check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      maximize=maximize))

    def _update(self, p, g, state, group):
        g = self._coupled_grad(p, g, group)
        if not state:
            state["step"], state["exp_avg"], state["exp_inf"] = 0, _zeros_like(p), _zeros_like(p)
        state["step"] += 1
        beta1, beta2 = group["betas"]
        exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
        exp_avg.mul_(beta1).add_(g, alpha=1 - beta1)
        exp_inf.copy_(lazyscope.maximum(exp_inf * beta2, g.abs() + group["eps"]))
        p.addcdiv_(exp_avg, exp_inf, value=-group["lr"] / (1 - beta1 ** state["step"]))


class Adadelta(Optimizer):
    """v ← ρ·v + (1 − ρ)·g²; Δ = √(a + eps)/√(v + eps) · g; a ← ρ·a + (1 − ρ)·Δ²; p −= lr·Δ."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, *, maximize=False):
        _check("learning rate", lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check("epsilon value", eps)
        _check("weight_decay value", weight_decay)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize))

    def _update(self, p, g, state, group):
        g = self._coupled_grad(p, g, group)
        if not state:
            state["step"], state["square_avg"], state["acc_delta"] = 0, _zeros_like(p), _zeros_like(p)
        state["step"] += 1
        rho, eps = group["rho"], group["eps"]
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        square_avg.mul_(rho).addcmul_(g, g, value=1 - rho)
        delta = (acc_delta + eps).sqrt() / (square_avg + eps).sqrt() * g
        acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        p.add_(delta, alpha=-group["lr"])


def _weight_decay(p, g, group):
    """Coupled (g + wd·p) or, with decoupled_weight_decay, p ← p·(1 − lr·wd) (as AdamW)."""
    wd = group["weight_decay"]
    if group["maximize"]:
        g = -g
    if wd == 0:
        return g
    if group["decoupled_weight_decay"]:
        p.mul_(1 - group["lr"] * wd)
        return g
    return g + p * wd


class NAdam(Optimizer):
    """Adam with Nesterov momentum and momentum decay: μ_t = β1·(1 − ½·0.96^(t·ψ));
    p −= lr·(1 − μ_t)/(1 − Πμ) · g/d + lr·μ_{t+1}/(1 − Πμ·μ_{t+1}) · m/d, d = √(v/(1 − β2^t)) + eps."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3, *,
                 decoupled_weight_decay=False, maximize=False):
        _check("learning rate", lr)
        _check("epsilon value", eps)
        _check("weight_decay value", weight_decay)
        _check("momentum_decay value", momentum_decay)
        _check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize))

    def _update(self, p, g, state, group):
        g = _weight_decay(p, g, group)
        if not state:
            state["step"], state["mu_product"] = 0, 1.0
            state["exp_avg"], state["exp_avg_sq"] = _zeros_like(p), _zeros_like(p)
        state["step"] += 1
        t, lr = state["step"], group["lr"]
        beta1, beta2 = group["betas"]
        mu = beta1 * (1 - 0.5 * 0.96 ** (t * group["momentum_decay"]))
        mu_next = beta1 * (1 - 0.5 * 0.96 ** ((t + 1) * group["momentum_decay"]))
        state["mu_product"] *= mu
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.mul_(beta1).add_(g, alpha=1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        denom = (exp_avg_sq * (1.0 / (1 - beta2 ** t))).sqrt().add_(group["eps"])
        p.addcdiv_(g, denom, value=-lr * (1 - mu) / (1 - state["mu_product"]))
        p.addcdiv_(exp_avg, denom, value=-lr * mu_next / (1 - state["mu_product"] * mu_next))


class RAdam(Optimizer):
    """Adam with the variance rectification: while ρ_t = ρ∞ − 2t·β2^t/(1 − β2^t) ≤ 5 the step is lr·m̂;
    after, lr·m̂·r_t·√(1 − β2^t)/(√v + eps), r_t = √((ρ_t − 4)(ρ_t − 2)ρ∞ / ((ρ∞ − 4)(ρ∞ − 2)ρ_t))."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, *,
                 decoupled_weight_decay=False, maximize=False):
        _check("learning rate", lr)
        _check("epsilon value", eps)
        _check("weight_decay value", weight_decay)
        _check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay, maximize=maximize))

    def _update(self, p, g, state, group):
        g = _weight_decay(p, g, group)
        if not state:
            state["step"], state["exp_avg"], state["exp_avg_sq"] = 0, _zeros_like(p), _zeros_like(p)
        state["step"] += 1
        t, lr = state["step"], group["lr"]
        beta1, beta2 = group["betas"]
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.mul_(beta1).add_(g, alpha=1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        bias1, bias2 = 1 - beta1 ** t, 1 - beta2 ** t
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * t * beta2 ** t / bias2
        if rho_t > 5.0:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            p.addcdiv_(exp_avg, exp_avg_sq.sqrt().add_(group["eps"]),
                       value=-lr * rect * math.sqrt(bias2) / bias1)
        else:
            p.add_(exp_avg, alpha=-lr / bias1)
