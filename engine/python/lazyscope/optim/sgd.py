"""SGD with momentum, dampening, Nesterov and weight decay (torch.optim.SGD's rule)."""
import lazyscope
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
