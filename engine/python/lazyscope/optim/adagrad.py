"""Adagrad (torch.optim.Adagrad's rule): the sum of squared gradients scales each step."""
import lazyscope
from lazyscope.optim.optimizer import Optimizer


class Adagrad(Optimizer):
    """clr = lr / (1 + (step − 1)·lr_decay); sum += g²; p −= clr · g / (√sum + eps),
    g including weight decay (maximize: −g)."""

    def __init__(self, params, lr=0.01, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10, *,
                 maximize=False):
        for name, value in (("learning rate", lr), ("lr_decay", lr_decay), ("weight_decay value", weight_decay),
                            ("initial_accumulator_value", initial_accumulator_value), ("epsilon value", eps)):
            if value < 0.0:
                raise ValueError(f"Invalid {name}: {value}")
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, eps=eps,
                                      maximize=maximize))

    def _update(self, p, g, state, group):
        g = self._coupled_grad(p, g, group)
        if not state:
            state["step"] = 0
            state["sum"] = lazyscope.full(tuple(p.shape), float(group["initial_accumulator_value"]), dtype=p.dtype,
                                          device=p.device)
        state["step"] += 1
        clr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        total = state["sum"]
        total.add_(g * g)
        p.add_(g / (total.sqrt() + group["eps"]), alpha=-clr)
