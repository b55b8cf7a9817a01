"""torch.nn.utils.weight_norm / spectral_norm, the older hook-based forms:
the module keeps ``<name>_g`` and ``<name>_v`` (weight norm) or
``<name>_orig`` with buffers ``<name>_u``, ``<name>_v`` (spectral norm) as
its parameters, and a forward pre-hook sets ``<name>`` from them before
each call (the formulas of nn.utils.parametrizations)."""
from lazyscope.nn.parameter import Parameter, _NoGrad
from lazyscope.nn.utils.parametrizations import _norm_except_dim, _SpectralNorm

__all__ = ["weight_norm", "remove_weight_norm", "spectral_norm", "remove_spectral_norm"]


def _set_plain(module, name, value):
    """module.<name> as a plain (non-parameter) attribute."""
    module._drop(name)
    object.__setattr__(module, name, value)


class _WeightNormHook:
    def __init__(self, name, dim):
        self.name, self.dim = name, dim

    def compute(self, module):
        g, v = getattr(module, self.name + "_g"), getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    def __call__(self, module, args):
        _set_plain(module, self.name, self.compute(module))


def weight_norm(module, name="weight", dim=0):
    weight = module._parameters.get(name)
    if weight is None:
        raise ValueError(f"weight_norm: module {type(module).__name__} has no parameter '{name}'")
    if any(isinstance(h, _WeightNormHook) and h.name == name for h in module._forward_pre_hooks.values()):
        raise RuntimeError(f"weight_norm: cannot register two weight_norm hooks on the same parameter {name}")
    hook = _WeightNormHook(name, dim)
    with _NoGrad():
        g = _norm_except_dim(weight.detach(), dim).clone()
        v = weight.detach().clone()
    module._drop(name)
    module.register_parameter(name + "_g", Parameter(g))
    module.register_parameter(name + "_v", Parameter(v))
    hook(module, ())
    module.register_forward_pre_hook(hook)
    return module


def remove_weight_norm(module, name="weight"):
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, _WeightNormHook) and hook.name == name:
            with _NoGrad():
                weight = hook.compute(module).detach().clone()
            del module._forward_pre_hooks[key]
            module._drop(name + "_g")
            module._drop(name + "_v")
            module._drop(name)
            module.register_parameter(name, Parameter(weight))
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {type(module).__name__}")


class _SpectralNormHook:
    def __init__(self, name, norm):
        self.name, self.norm = name, norm

    def __call__(self, module, args):
        self.norm.training = module.training
        _set_plain(module, self.name, self.norm(getattr(module, self.name + "_orig")))


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    weight = module._parameters.get(name)
    if weight is None:
        raise ValueError(f"spectral_norm: module {type(module).__name__} has no parameter '{name}'")
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    norm = _SpectralNorm(weight, n_power_iterations, dim, eps)
    module._drop(name)
    module.register_parameter(name + "_orig", weight)
    module.register_buffer(name + "_u", norm._u)
    module.register_buffer(name + "_v", norm._v)
    hook = _SpectralNormHook(name, norm)
    with _NoGrad():
        _set_plain(module, name, weight.detach() / (norm._u * (norm._as_matrix(weight.detach()) @ norm._v)).sum())
    module.register_forward_pre_hook(hook)
    return module


def remove_spectral_norm(module, name="weight"):
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, _SpectralNormHook) and hook.name == name:
            with _NoGrad():
                norm = hook.norm
                norm.training = False
                weight = norm(getattr(module, name + "_orig")).detach().clone()
            del module._forward_pre_hooks[key]
            for suffix in ("_orig", "_u", "_v", ""):
                module._drop(name + suffix)
            module.register_parameter(name, Parameter(weight))
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {type(module).__name__}")


