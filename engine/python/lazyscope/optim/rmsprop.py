"""RMSprop (torch.optim.RMSprop's rule): square averages, optional momentum and centering."""
import lazyscope
from lazyscope.optim.optimizer import Optimizer


class RMSprop(Optimizer):
    def __init__(self, params, lr=0.01, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False, *,
                 maximize=False):
        for name, value in (("learning rate", lr), ("epsilon value", eps), ("momentum value", momentum),
                            ("weight_decay value", weight_decay), ("alpha value", alpha)):
            if value < 0.0:
                raise ValueError(f"Invalid {name}: {value}")
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered, maximize=maximize))

    def _update(self, p, g, state, group):
        g = self._coupled_grad(p, g, group)
        if not state:
            zeros = lambda: lazyscope.zeros(*p.shape, dtype=p.dtype, device=p.device)  # noqa: E731
            state["step"] = 0
            state["square_avg"] = zeros()
            if group["momentum"] > 0:
                state["momentum_buffer"] = zeros()
            if group["centered"]:
                state["grad_avg"] = zeros()
        state["step"] += 1
        alpha = group["alpha"]
        square_avg = state["square_avg"]
        square_avg.mul_(alpha).add_(g * g, alpha=1 - alpha)
        if group["centered"]:
            grad_avg = state["grad_avg"]
            grad_avg.mul_(alpha).add_(g, alpha=1 - alpha)
            avg = (square_avg - grad_avg * grad_avg).sqrt() + group["eps"]
        else:
            avg = square_avg.sqrt() + group["eps"]
        if group["momentum"] > 0:
            buf = state["momentum_buffer"]
            buf.mul_(group["momentum"]).add_(g / avg)
            p.add_(buf, alpha=-group["lr"])
        else:
            p.add_(g / avg, alpha=-group["lr"])
