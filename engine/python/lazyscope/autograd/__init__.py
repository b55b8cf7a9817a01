"""torch.autograd's Python-facing pieces: Function (custom forward and
backward), and the grad-mode helpers under their torch.autograd names.

A Function's forward runs with no graph recorded; its outputs are then tied
to its tensor inputs through a factor of exactly 1 (1 plus each input,
through a view, selected by an all-false mask and summed: every value,
-0.0, infinities and NaNs included, is left as it is). Backward
reaches the outputs first: their hooks keep the incoming gradients; then it
reaches the inputs' views, whose hooks replace the link's zero gradients
with what the Function's backward returns for each input. So the engine's
own backward (and a lazy device's trace of it) runs the user's backward
where PyTorch would."""
import lazyscope as _ls
from lazyscope import enable_grad, no_grad, set_grad_enabled  # noqa: F401

Tensor = _ls._C.Tensor


class FunctionCtx:
    """What forward hands to backward: saved tensors and flags, as torch's ctx."""

    def __init__(self, needs_input_grad):
        self.needs_input_grad = needs_input_grad
        self.saved_tensors = ()
        self._non_differentiable = set()
        self._materialize_grads = True

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save tensors or None, got {type(t).__name__}")
        self.saved_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable.update(id(t) for t in tensors)

    def mark_dirty(self, *tensors):
        """Accepted: in-place outputs need no bookkeeping here."""

    def set_materialize_grads(self, value):
        self._materialize_grads = bool(value)


class _Backward:
    """The state one application shares between its hooks."""

    def __init__(self, fn, ctx, outputs, n_inputs):
        self.fn, self.ctx, self.outputs = fn, ctx, outputs
        self.grad_outputs = [None] * len(outputs)
        self.result = None
        self.n_inputs = n_inputs

    def keep(self, j):
        def hook(grad):
            self.grad_outputs[j] = grad
            return None
        return hook

    def give(self, i):
        def hook(grad):
            if self.result is None:
                grads = []
                for j, (g, out) in enumerate(zip(self.grad_outputs, self.outputs)):
                    if g is None and self.ctx._materialize_grads and isinstance(out, Tensor):
                        g = _ls.zeros_like(out)
                    grads.append(g)
                result = self.fn.backward(self.ctx, *grads)
                result = result if isinstance(result, tuple) else (result,)
                if len(result) < self.n_inputs:
                    raise RuntimeError(f"{self.fn.__name__}.backward returned {len(result)} gradients, expected "
                                       f"{self.n_inputs} (one per forward input, None for non-tensors)")
                self.result = result
            g = self.result[i]
            if g is None:
                return None
            if tuple(g.shape) != tuple(grad.shape):
                raise RuntimeError(f"{self.fn.__name__}.backward: the gradient of input {i} has shape "
                                   f"{tuple(g.shape)}, expected {tuple(grad.shape)}")
            return g.to(grad.dtype)
        return hook


class Function:
    """A custom differentiable operation, as torch.autograd.Function:
    subclass it with static forward(ctx, *args) and backward(ctx, *grads),
    and call it with Sub.apply(*args)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("Function.forward: define it in a subclass (a staticmethod taking ctx first)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("Function.backward: define it in a subclass (a staticmethod taking ctx first)")

    @classmethod
    def apply(cls, *args, **kwargs):
        needs = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        ctx = FunctionCtx(needs)
        with no_grad():
            outputs = cls.forward(ctx, *args, **kwargs)
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else tuple(outputs)
        if not (_ls.is_grad_enabled() and any(needs)):
            return outputs
        state = _Backward(cls, ctx, outs, len(args))
        link = None
        for i, a in enumerate(args):
            if not needs[i]:
                continue
            view = a * 1  # a node of its own per application (views of one base share theirs)
            view.register_hook(state.give(i))
            nothing = _ls.where(_ls.zeros(a.shape, dtype=_ls.bool, device=a.device), view, 0.0).sum()
            link = nothing if link is None else link + nothing
        tied = []
        for j, out in enumerate(outs):
            if (isinstance(out, Tensor) and out.is_floating_point() and id(out) not in ctx._non_differentiable):
                t = out.detach() * (link.to(out.dtype) + 1.0)  # times exactly 1: -0.0, inf, NaN unchanged
                t.register_hook(state.keep(j))
                tied.append(t)
            else:
                tied.append(out.detach() if isinstance(out, Tensor) else out)
        return tied[0] if single else tuple(tied)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """torch.autograd.backward: each tensor's backward with its gradient (summed into the leaves);
    create_graph records the pass (higher-order gradients)."""
    if inputs is not None:
        raise NotImplementedError("autograd.backward: inputs= is not supported; use autograd.grad(outputs, inputs) "
                                  "to get the gradients of chosen tensors")
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    grads = [None] * len(tensors) if grad_tensors is None else (
        [grad_tensors] if isinstance(grad_tensors, Tensor) else list(grad_tensors))
    retain = bool(create_graph) if retain_graph is None else bool(retain_graph)
    for k, (t, g) in enumerate(zip(tensors, grads)):
        keep = retain or k < len(tensors) - 1
        t.backward(g, retain_graph=keep, create_graph=bool(create_graph))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of outputs with respect to inputs, returned as a tuple
    (no .grad is written), as torch.autograd.grad. create_graph=True records
    the backward pass, so the gradients can be differentiated again
    (higher-order gradients; retain_graph then defaults to True).
    is_grads_batched is refused."""
    if is_grads_batched:
        raise NotImplementedError("autograd.grad: is_grads_batched is not supported; loop over the grad_outputs")
    single_input = isinstance(inputs, Tensor)
    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    ins = [inputs] if single_input else list(inputs)
    if grad_outputs is None:
        seeds = [None] * len(outs)
    else:
        seeds = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
    allow = bool(allow_unused) or bool(materialize_grads)
    retain = bool(create_graph) if retain_graph is None else bool(retain_graph)
    result = _ls._C._autograd_grad(outs, seeds, ins, retain, allow, bool(create_graph))
    if materialize_grads:
        result = [_ls.zeros_like(x) if g is None else g for g, x in zip(result, ins)]
    return tuple(result)


from lazyscope.autograd import functional  # noqa: E402,F401
