"""nn.Module and the containers, with PyTorch's semantics.

Parameters and buffers keep their identity: ``load_state_dict`` copies into
them in place (``copy_`` under no_grad), as PyTorch does. One difference
follows from the engine: a tensor's device and dtype are fixed (there is no
``.data = other`` across devices), so ``to()`` with a new device or dtype
puts new parameter objects in the module; build optimizers after moving the
model (PyTorch's own advice). Calling a module records its scope path
(``Net.layer1.conv``) on the IR nodes it creates, through ``_C.set_scope``.
"""
import itertools
import threading
from collections import OrderedDict, namedtuple

from lazyscope import _C
from lazyscope.nn.parameter import Parameter, Tensor, _NoGrad, _converted, _mark_parameter, is_parameter

_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])

# The scope stack of the module calls in progress on this thread: (module, path).
_scopes = threading.local()


def _scope_stack():
    stack = getattr(_scopes, "stack", None)
    if stack is None:
        stack = _scopes.stack = []
    return stack



def _child_path(parent, child):
    """`child`'s attribute path under `parent` ("blocks.0"), looking through
    the containers a forward iterates without calling (ModuleList,
    ModuleDict); None when it is not below `parent`. Without this the blocks
    of a ModuleList were all scoped by their class name, one scope for all."""
    for name, module in parent._modules.items():
        if module is child:
            return name
    for name, module in parent._modules.items():
        if isinstance(module, (ModuleList, ModuleDict)):
            inner = _child_path(module, child)
            if inner is not None:
                return f"{name}.{inner}"
    return None

class RemovableHandle:
    """Returned by register_*_hook; ``remove()`` unregisters the hook."""
    _ids = itertools.count()

    def __init__(self, hooks):
        self._hooks = hooks
        self.id = next(self._ids)

    def remove(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class Module:
    """Base class of every layer and model (``torch.nn.Module``)."""

    training: bool

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())

    # Attribute registration.
    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {name!r} before Module.__init__() call "
                                 f"(call super().__init__() first in {type(self).__name__}.__init__)")
        params, buffers, modules = self._parameters, self._buffers, self._modules
        if is_parameter(value):
            self._drop(name)
            params[name] = value
        elif isinstance(value, Module):
            self._drop(name)
            modules[name] = value
        elif name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                f"(nn.Parameter or None expected)")
            params[name] = None
        elif name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (Tensor or None expected)")
            buffers[name] = value
        elif name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                f"(nn.Module or None expected)")
            modules[name] = None
        else:
            object.__setattr__(self, name, value)

    def _drop(self, name):
        for d in (self.__dict__, self._parameters, self._buffers, self._modules):
            d.pop(name, None)
        self._non_persistent_buffers.discard(name)

    def __getattr__(self, name):
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        if name in self._parameters or name in self._buffers or name in self._modules:
            self._drop(name)
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))

    def register_parameter(self, name, param):
        if "." in name or not name:
            raise KeyError(f"parameter name can't contain '.' or be empty, got {name!r}")
        if param is not None and not is_parameter(param):
            raise TypeError(f"register_parameter: '{name}' must be an nn.Parameter or None, "
                            f"got {type(param).__name__}")
        self._drop(name)
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        if "." in name or not name:
            raise KeyError(f"buffer name can't contain '.' or be empty, got {name!r}")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: '{name}' must be a Tensor or None, got {type(tensor).__name__}")
        self._drop(name)
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent_buffers.add(name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {type(module).__name__} is not a Module subclass")
        if "." in name or not name:
            raise KeyError(f"module name can't contain '.' or be empty, got {name!r}")
        self._drop(name)
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        module = self
        for part in target.split(".") if target else []:
            if part not in module._modules:
                raise AttributeError(f"{type(module).__name__} has no submodule {part!r} (looking up {target!r})")
            module = module._modules[part]
        return module

    # Iteration.
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, table, prefix, recurse, remove_duplicate=True):
        seen = set()
        modules = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, table).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # Modes and devices.
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError(f"train(): mode is expected to be a bool, got {type(mode).__name__}")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is not None:
                p.grad = None if set_to_none else p.grad * 0
        return None

    def _apply_to_tensors(self, fn):
        """Replaces every parameter and buffer that fn(tensor) changes (a new
        device or dtype) by the converted tensor. A parameter shared by several
        modules becomes one new parameter, shared alike; unchanged ones keep
        their identity."""
        converted = {}  # id(old parameter) -> (old, new), so tied weights stay tied
        for m in self.modules():
            for name, p in m._parameters.items():
                if p is None:
                    continue
                if id(p) not in converted:
                    new = fn(p)
                    converted[id(p)] = (p, p if new is p else _converted(p, new))
                m._parameters[name] = converted[id(p)][1]
            for name, b in m._buffers.items():
                if b is not None:
                    m._buffers[name] = fn(b)
        return self

    def to(self, *args, **kwargs):
        """Moves (and/or casts floating-point) parameters and buffers: to(device), to(dtype), to(device, dtype)."""
        device, dtype = _parse_to(args, kwargs)

        def convert(t):
            out = t
            if device is not None and str(out.device) != device:
                out = out.to(device)
            if dtype is not None and out.is_floating_point() and out.dtype != dtype:
                out = out.to(dtype)
            return out
        return self._apply_to_tensors(convert)

    def cpu(self):
        return self.to("cpu")

    def float(self):
        from lazyscope import float32
        return self.to(float32)

    def double(self):
        from lazyscope import float64
        return self.to(float64)

    def half(self):
        from lazyscope import float16
        return self.to(float16)

    def bfloat16(self):
        from lazyscope import bfloat16
        return self.to(bfloat16)

    def type(self, dst_type):
        """Casts floating-point parameters and buffers to dst_type (a dtype)."""
        return self.to(dst_type)

    def cuda(self, device=None):
        raise NotImplementedError("Module.cuda is not supported by LazyScope (no CUDA backend); use "
                                  "module.to(xm.xla_device()) or module.to('lazy:0')")

    def share_memory(self):
        """The module itself: host memory is the device's here, nothing to share."""
        return self

    def compile(self, *args, **kwargs):
        """Module.compile (torch 2): nothing to do, a lazy device already compiles each step's graph."""
        from lazyscope import compile as _compile
        _compile(self, *args, **kwargs)

    def _lookup(self, target, table, what):
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        entries = module.__dict__.get(table, {})
        if name not in entries or entries[name] is None:
            raise AttributeError(f"{type(module).__name__} has no {what} {name!r} (looking up {target!r})")
        return entries[name]

    def get_parameter(self, target):
        """The parameter at the dotted path `target` ("layer.0.weight")."""
        return self._lookup(target, "_parameters", "parameter")

    def get_buffer(self, target):
        return self._lookup(target, "_buffers", "buffer")

    def apply(self, fn):
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # State.
    def state_dict(self, destination=None, prefix="", keep_vars=False):
        out = OrderedDict() if destination is None else destination
        for module_prefix, module in self.named_modules(prefix=prefix.rstrip(".")):
            base = f"{module_prefix}." if module_prefix else ""
            for name, p in module._parameters.items():
                if p is not None:
                    out[base + name] = p if keep_vars else p.detach()
            for name, b in module._buffers.items():
                if b is not None and name not in module._non_persistent_buffers:
                    out[base + name] = b if keep_vars else b.detach()
        return out

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copies values onto this module's devices and dtypes. strict: the keys
        must match exactly; shapes must always match. Returns (missing, unexpected)."""
        own = {}
        for module_prefix, module in self.named_modules():
            base = f"{module_prefix}." if module_prefix else ""
            for name, p in module._parameters.items():
                if p is not None:
                    own[base + name] = (module, "_parameters", name, p)
            for name, b in module._buffers.items():
                if b is not None and name not in module._non_persistent_buffers:
                    own[base + name] = (module, "_buffers", name, b)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        if strict and (missing or unexpected):
            if missing:
                errors.append("Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing))
            if unexpected:
                errors.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected))
        copies = []
        for key, (module, table, name, current) in own.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                errors.append(f'While copying "{key}": expected a Tensor, got {type(value).__name__}')
                continue
            if tuple(value.shape) != tuple(current.shape):
                errors.append(f"size mismatch for {key}: copying a param with shape {tuple(value.shape)} "
                              f"from checkpoint, the shape in current model is {tuple(current.shape)}.")
                continue
            copies.append((current, value.detach()))
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        # In place, as PyTorch: parameters and buffers keep their identity (an
        # optimizer built on them, or a reference user code holds, follows),
        # and copy_ moves and casts to each one's device and dtype.
        with _NoGrad():
            for current, value in copies:
                current.copy_(value)
        return _IncompatibleKeys(missing, unexpected)

    # Hooks.
    def register_forward_hook(self, hook):
        """hook(module, args, output) -> None or a replacement output."""
        handle = RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        return handle

    def register_forward_pre_hook(self, hook):
        """hook(module, args) -> None or replacement args (a tuple, or one value)."""
        handle = RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = hook
        return handle

    # Calls.
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def _scope_path(self):
        stack = _scope_stack()
        if not stack:
            return type(self).__name__
        parent, parent_path = stack[-1]
        name = _child_path(parent, self)
        return f"{parent_path}.{name if name is not None else type(self).__name__}"

    def __call__(self, *args, **kwargs):
        stack = _scope_stack()
        path = self._scope_path()
        stack.append((self, path))
        _C.set_scope(path)
        try:
            if not (self._forward_pre_hooks or self._forward_hooks):
                return self.forward(*args, **kwargs)  # most calls: no hook lists copied
            for hook in list(self._forward_pre_hooks.values()):
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
            output = self.forward(*args, **kwargs)
            for hook in list(self._forward_hooks.values()):
                result = hook(self, args, output)
                if result is not None:
                    output = result
            return output
        finally:
            stack.pop()
            _C.set_scope(stack[-1][1] if stack else None)

    def __deepcopy__(self, memo):
        """A replica with its own parameters and buffers (copies of the values,
        on the same devices), registered like a freshly built module."""
        import copy
        new = object.__new__(type(self))
        memo[id(self)] = new
        for key, value in self.__dict__.items():
            object.__setattr__(new, key, copy.deepcopy(value, memo))
        for p in new._parameters.values():
            if p is not None:
                _mark_parameter(p)
        return new

    # Printing.
    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines.extend(extra.split("\n"))
        for name, module in self._modules.items():
            body = repr(module).replace("\n", "\n  ")
            lines.append(f"({name}): {body}")
        if not lines:
            return f"{type(self).__name__}()"
        if len(lines) == 1 and not self._modules:
            return f"{type(self).__name__}({lines[0]})"
        return f"{type(self).__name__}(\n  " + "\n  ".join(lines) + "\n)"


def _parse_to(args, kwargs):
    from lazyscope import dtype as dtype_type, device as device_type
    device = dtype = None
    for a in list(args) + [kwargs.get("device"), kwargs.get("dtype")]:
        if a is None:
            continue
        if isinstance(a, dtype_type):
            dtype = a
        elif isinstance(a, (str, device_type)):
            device = str(a)
        elif isinstance(a, Tensor):
            device, dtype = str(a.device), a.dtype
        else:
            raise TypeError(f"Module.to(): expected a device, a dtype or a tensor, got {type(a).__name__}")
    return device, dtype


class Sequential(Module):
    """Runs its modules in order; built from modules or from an OrderedDict."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return Sequential(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index(idx, len(self))]

    def __setitem__(self, idx, module):
        key = list(self._modules.keys())[_index(idx, len(self))]
        setattr(self, key, module)

    def __delitem__(self, idx):
        key = list(self._modules.keys())[_index(idx, len(self))]
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def forward(self, input):  # noqa: A002
        for module in self:
            input = module(input)
        return input


def _index(idx, n):
    idx = int(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range for a container of {n} modules")
    return idx % n


class ModuleList(Module):
    """A list of modules, registered as children named "0", "1", …"""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ModuleList(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self)))]

    def __setitem__(self, idx, module):
        setattr(self, str(_index(idx, len(self))), module)

    def __delitem__(self, idx):
        modules = list(self._modules.values())
        del modules[_index(idx, len(self)) if not isinstance(idx, slice) else idx]
        self._modules.clear()
        for i, m in enumerate(modules):
            self._modules[str(i)] = m

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(modules):
            self.add_module(str(i), m)


class ModuleDict(Module):
    """An ordered dict of modules, registered as children under their keys."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def pop(self, key):
        return self._modules.pop(key)

    def clear(self):
        self._modules.clear()

    def update(self, modules):
        items = modules.items() if hasattr(modules, "items") else modules
        for key, module in items:
            self.add_module(key, module)


__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "Parameter", "RemovableHandle"]
