"""nn.Parameter and the one place where a parameter's value is replaced.

LazyScope's tensors have no in-place update yet (no ``copy_``/``set_data`` in
the bindings), so a parameter cannot change its value while keeping its
identity. Instead, ``_assign`` makes a new leaf tensor holding the new value
and swaps it in, everywhere the framework keeps parameters: every live
``Module`` (its ``_parameters``) and every live ``Optimizer`` (its
``param_groups`` and ``state``). Code that holds its own reference to an old
parameter object keeps seeing the old value; read parameters through the
module (``model.fc.weight``) or ``model.parameters()`` after a step.

When the engine gains an in-place ``copy_`` that rebinds a tensor's value,
only ``_assign_all`` needs to change (to ``param.copy_(value)`` under no_grad).
"""
import weakref

from lazyscope import _C

Tensor = _C.Tensor

# id(tensor) -> weak reference, for the tensors created as parameters. A
# registry rather than a subclass because the engine's Tensor type cannot be
# subclassed from Python (it has no Python-side constructor).
_parameter_ids = {}

# Objects that hold parameters and implement _replace_parameters(mapping).
_owners = weakref.WeakSet()


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


def _register_owner(owner):
    _owners.add(owner)


def _assign_all(pairs):
    """Gives each parameter in ``pairs`` ((param, new_value), …) its new value.

    Returns the new parameter objects, in order. Each takes the new value's
    device and dtype and keeps the old one's requires_grad, its .grad and its
    parameter mark; the swap is done in one
    sweep over the live owners, so an optimizer step costs one pass.
    """
    mapping = {}
    out = []
    with _NoGrad():
        for old, value in pairs:
            if not isinstance(value, Tensor):
                raise TypeError(f"_assign: the new value must be a Tensor, got {type(value).__name__}")
            if tuple(value.shape) != tuple(old.shape):
                raise ValueError(f"_assign: new value of shape {tuple(value.shape)} for a parameter of shape "
                                 f"{tuple(old.shape)}")
            new = value.detach()
            if old.requires_grad:
                new.requires_grad_()
            grad = old.grad
            if grad is not None:
                # Module.to() may move or cast a parameter that has a gradient.
                new.grad = grad.to(new.device).to(new.dtype)
            if is_parameter(old):
                _mark_parameter(new)
            # The old object stays referenced by `mapping` for the sweep, so
            # its id cannot be reused by another object meanwhile.
            mapping[id(old)] = (old, new)
            out.append(new)
    for owner in list(_owners):
        owner._replace_parameters(mapping)
    return out


def _assign(param, new_value):
    """Gives one parameter a new value (see ``_assign_all``); returns the new object."""
    return _assign_all([(param, new_value)])[0]


class _NoGrad:
    def __enter__(self):
        self._previous = _C.is_grad_enabled()
        _C.set_grad_enabled(False)

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._previous)
        return False
