"""torch.nn.utils.parametrize: a tensor of a module computed from an
"original" parameter each time it is read (weight = f(original)), as
PyTorch lays it out: ``module.parametrizations.<name>.original`` (or
``original0``, ``original1``... when the parametrization's right_inverse
returns several tensors), and ``module.<name>`` a property on a subclass of
the module's class made for it. Everything is ordinary engine ops, so the
parametrized weight is part of a lazy step's graph and differentiable."""
from lazyscope.nn.module import Module, ModuleDict, ModuleList
from lazyscope.nn.parameter import Parameter, _NoGrad

__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized", "ParametrizationList",
           "cached"]


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order to its originals."""

    def __init__(self, modules, original):
        super().__init__(modules)
        first = modules[0]
        value = first.right_inverse(original) if hasattr(first, "right_inverse") else original
        with _NoGrad():
            if isinstance(value, (tuple, list)):
                self.is_tensor = False
                self.ntensors = len(value)
                for i, v in enumerate(value):
                    self.register_parameter(f"original{i}", Parameter(v.detach().clone(),
                                                                      requires_grad=original.requires_grad))
            else:
                self.is_tensor = True
                self.ntensors = 1
                self.register_parameter("original", original if isinstance(original, Parameter) and value is original
                                        else Parameter(value.detach().clone(), requires_grad=original.requires_grad))

    def originals(self):
        return [self.original] if self.is_tensor else [getattr(self, f"original{i}") for i in range(self.ntensors)]

    def forward(self):
        x = self[0](*self.originals())
        for module in list(self)[1:]:
            x = module(x)
        return x

    def right_inverse(self, value):
        """Sets the originals so that forward() gives `value` (each parametrization's right_inverse, last first)."""
        with _NoGrad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse: "
                                       f"the parametrized tensor cannot be assigned")
                value = module.right_inverse(value)
            values = list(value) if isinstance(value, (tuple, list)) else [value]
            for original, v in zip(self.originals(), values):
                original.copy_(v)


def _class_with(module, tensor_name):
    """module's class, or the subclass this module already has, with a
    property `tensor_name` reading its parametrization."""
    cls = type(module)
    if not getattr(cls, "_lazyscope_parametrized", False):
        cls = type(f"Parametrized{cls.__name__}", (cls,), {"_lazyscope_parametrized": True,
                                                          "_lazyscope_original_class": cls})
        module.__class__ = cls

    def get(self):
        return self.parametrizations[tensor_name]()

    def set_(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(cls, tensor_name, property(get, set_))
    return cls


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """module.<tensor_name> becomes parametrization(original); a second call
    on the same tensor appends to its list."""
    if not isinstance(parametrization, Module):
        raise TypeError(f"register_parametrization: the parametrization must be an nn.Module, got "
                        f"{type(parametrization).__name__}")
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        current = plist()
        plist.append(parametrization)
        if not unsafe:
            out = parametrization(current)
            if tuple(out.shape) != tuple(current.shape):
                raise ValueError(f"register_parametrization: it changes the shape of '{tensor_name}' from "
                                 f"{list(current.shape)} to {list(out.shape)} (pass unsafe=True to allow it)")
        return module
    original = module._parameters.get(tensor_name, module._buffers.get(tensor_name))
    if original is None:
        raise ValueError(f"register_parametrization: module {type(module).__name__} has no parameter or buffer "
                         f"named '{tensor_name}'")
    if not unsafe:
        out = parametrization(original) if not hasattr(parametrization, "right_inverse") else None
        if out is not None and tuple(out.shape) != tuple(original.shape):
            raise ValueError(f"register_parametrization: it changes the shape of '{tensor_name}' from "
                             f"{list(original.shape)} to {list(out.shape)} (pass unsafe=True to allow it)")
    plist = ParametrizationList([parametrization], original)
    module._drop(tensor_name)
    if "parametrizations" not in module._modules:
        module.parametrizations = ModuleDict()
    module.parametrizations[tensor_name] = plist
    _class_with(module, tensor_name)
    return module


def is_parametrized(module, tensor_name=None):
    plists = module._modules.get("parametrizations")
    if plists is None or not isinstance(plists, ModuleDict):
        return False
    return tensor_name is None or tensor_name in plists._modules


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Back to a plain parameter: the current parametrized value
    (leave_parametrized) or the original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"remove_parametrizations: module {type(module).__name__} has no parametrization on "
                         f"'{tensor_name}'")
    plist = module.parametrizations[tensor_name]
    with _NoGrad():
        if leave_parametrized:
            value = plist().detach().clone()
        elif plist.is_tensor:
            value = plist.original.detach().clone()
        else:
            raise ValueError("remove_parametrizations: leave_parametrized=False needs a single original tensor")
    delattr(type(module), tensor_name)
    del module.parametrizations._modules[tensor_name]
    module.register_parameter(tensor_name, Parameter(value))
    if not module.parametrizations._modules:
        module._drop("parametrizations")
        module.__class__ = type(module)._lazyscope_original_class
    return module


class cached:  # noqa: N801  (PyTorch's name: a context manager)
    """Accepted: each read recomputes the parametrization (on a lazy device it
    is part of the step's graph either way)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


