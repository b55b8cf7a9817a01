"""nn.Parameter: a leaf tensor that modules register as a parameter.

Parameters keep their identity for their whole life, as in PyTorch: the
optimizers, ``load_state_dict`` and ``nn.init`` change a parameter's value
with the engine's in-place ops under ``no_grad`` (``p.add_(...)``,
``p.copy_(value)``), which rebind the tensor's value without making a new
object, so a reference kept by user code sees every update. Only
``Module.to()`` with a new device or dtype makes new parameter objects (see
Module._apply_to_tensors).
"""
import weakref

from lazyscope import _C

Tensor = _C.Tensor

# id(tensor) -> weak reference, for the tensors created as parameters. A
# registry rather than a subclass because the engine's Tensor type cannot be
# subclassed from Python (it has no Python-side constructor).
_parameter_ids = {}


def _forget(tensor_id):
    def callback(_ref):
        _parameter_ids.pop(tensor_id, None)
    return callback


def _mark_parameter(t):
    _parameter_ids[id(t)] = weakref.ref(t, _forget(id(t)))
    return t


def is_parameter(obj):
    if not isinstance(obj, Tensor):
        return False
    ref = _parameter_ids.get(id(obj))
    return ref is not None and ref() is obj


class _ParameterMeta(type):
    def __instancecheck__(cls, obj):
        return is_parameter(obj)


class Parameter(metaclass=_ParameterMeta):
    """``Parameter(data, requires_grad=True)``: a leaf tensor that modules
    register as a parameter (``isinstance(t, nn.Parameter)`` holds for it).

    Returns a Tensor (the engine's type): a detached alias of ``data`` marked
    as a parameter, as ``torch.nn.Parameter`` does.
    """

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C.from_numpy(__import__("numpy").zeros((0,), dtype="float32"), "cpu")
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: expected a Tensor, got {type(data).__name__}")
        t = data.detach()
        if requires_grad:
            if not t.is_floating_point():
                raise TypeError(f"Parameter: only floating-point tensors can require gradients, got {t.dtype}")
            t.requires_grad_()
        return _mark_parameter(t)


def _converted(param, value):
    """A new parameter object holding ``value`` (a moved or cast copy of
    ``param``), with param's requires_grad, its .grad (moved and cast alike)
    and its parameter mark. For Module.to() across devices or dtypes, where
    the value cannot be rebound in place (copy_ keeps the destination's
    device and dtype)."""
    new = value.detach()
    if param.requires_grad:
        new.requires_grad_()
    grad = param.grad
    if grad is not None:
        new.grad = grad.to(new.device).to(new.dtype)
    return _mark_parameter(new) if is_parameter(param) else new


class _NoGrad:
    def __enter__(self):
        self._previous = _C.is_grad_enabled()
        _C.set_grad_enabled(False)

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._previous)
        return False
