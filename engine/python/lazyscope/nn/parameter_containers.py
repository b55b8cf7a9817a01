"""nn.ParameterList and nn.ParameterDict: parameters held in a list or a
dict and registered under their index or key, so that parameters(),
state_dict(), .to() and the optimizers see them as PyTorch's do. A tensor
that is not yet a parameter is made one (as PyTorch does)."""
from lazyscope import _C
from lazyscope.nn.module import Module, _index
from lazyscope.nn.parameter import Parameter, is_parameter


def _as_parameter(owner, value):
    if value is None or is_parameter(value):
        return value
    if isinstance(value, _C.Tensor):
        return Parameter(value)
    raise TypeError(f"{owner}: expected a Tensor (made an nn.Parameter) or None, got {type(value).__name__}")


class ParameterList(Module):
    """A list of parameters, registered as "0", "1", …"""

    def __init__(self, values=None):
        super().__init__()
        if values is not None:
            self.extend(values)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList(list(self._parameters.values())[idx])
        return self._parameters[str(_index(idx, len(self)))]

    def __setitem__(self, idx, value):
        self.register_parameter(str(_index(idx, len(self))), _as_parameter("ParameterList", value))

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def __iadd__(self, values):
        return self.extend(values)

    def append(self, value):
        self.register_parameter(str(len(self)), _as_parameter("ParameterList", value))
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def extra_repr(self):
        return "\n".join(f"({i}): Parameter containing: [{p.dtype} of size {list(p.shape)}]"
                         for i, p in enumerate(self) if p is not None)


class ParameterDict(Module):
    """An ordered dict of parameters, registered under their keys."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, value):
        self.register_parameter(key, _as_parameter("ParameterDict", value))

    def __delitem__(self, key):
        del self._parameters[key]

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key):
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()

    def get(self, key, default=None):
        return self._parameters.get(key, default)

    def pop(self, key):
        return self._parameters.pop(key)

    def clear(self):
        self._parameters.clear()

    def update(self, parameters):
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for key, value in items:
            self[key] = value
