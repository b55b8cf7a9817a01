"""SGD with momentum, dampening, Nesterov and weight decay (torch.optim.SGD's rule)."""
from lazyscope.optim.optimizer import Optimizer, required


class SGD(Optimizer):
    def __init__(self, params, lr=required, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False):
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize))

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
                # The first step stores a copy of the gradient (PyTorch's rule;
                # a copy, since later steps update the buffer in place and the
                # engine has no clone(): g * 1.0 is a new tensor, g is float).
                # Later steps trace one more graph shape, then stay cached.
                buf = state["momentum_buffer"] = g.detach() * 1.0
            else:
                buf.mul_(momentum).add_(g, alpha=1 - group["dampening"])
            g = g + buf * momentum if group["nesterov"] else buf
        p.add_(g, alpha=-group["lr"])
