"""SGD with momentum, dampening, Nesterov and weight decay (torch.optim.SGD's rule)."""
import lazyscope
from lazyscope import _C
from lazyscope.optim.optimizer import Optimizer, required


class SGD(Optimizer):
    def __init__(self, params, lr=required, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None):
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize, foreach=foreach))

    def _step_group(self, group):
        # foreach (the default, as PyTorch's foreach=None on its devices):
        # the group's update traced by one C++ call (_C._sgd_step), the same
        # ops in the same order as _update's, where the Python loop crossed
        # into C++ ~5 times per parameter. A subclass overriding _update
        # keeps its own rule.
        if group.get("foreach") is False or type(self)._update is not SGD._update:
            return super()._step_group(group)
        params = [p for p in group["params"] if p.grad is not None]
        if not params:
            return
        momentum = group["momentum"]
        bufs = weights = None
        if momentum != 0:
            bufs, weights = [], []
            damped = 1.0 - group["dampening"]
            for p in params:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                if buf is None:  # as in _update: a zero buffer taking the whole gradient
                    buf = state["momentum_buffer"] = lazyscope.zeros(*p.shape, dtype=p.dtype, device=p.device)
                    weights.append(1.0)
                else:
                    weights.append(damped)
                bufs.append(buf)
        wd = group["weight_decay"]
        _C._sgd_step(params, bufs, weights, -group["lr"], momentum, wd if wd != 0 else None, group["nesterov"],
                     group["maximize"])

    def _update(self, p, g, state, group):
        # torch.optim.SGD's rule, in place on p and the momentum buffer.
        if group["maximize"]:
            g = -g
        if group["weight_decay"] != 0:
            g = g + p * group["weight_decay"]
        momentum = group["momentum"]
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                # PyTorch's first step sets the buffer to the gradient itself.
                # The same value comes from a zero buffer updated with a
                # gradient weight of 1 (0·momentum + 1·g), and then the first
                # step traces the same graph as every later one (the weight is
                # a Python number, a graph input): one compile, not two.
                buf = state["momentum_buffer"] = lazyscope.zeros(*p.shape, dtype=p.dtype, device=p.device)
                weight = 1.0
            else:
                weight = 1.0 - group["dampening"]
            buf.mul_(momentum).add_(g, alpha=weight)
            g = g + buf * momentum if group["nesterov"] else buf
        p.add_(g, alpha=-group["lr"])
