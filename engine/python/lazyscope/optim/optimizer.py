"""The Optimizer base class (torch.optim.Optimizer's interface).

Updates are written as ordinary tensor expressions: on a lazy device they
become part of the step's graph. Hyper-parameters (lr, betas, weight decay,
the bias corrections) enter as Python numbers, which the engine makes graph
inputs, so a scheduler changing the lr does not recompile. As in
torch.optim, ``step`` updates each parameter and its state tensors in place
(``p.add_(...)`` under no_grad), so parameters keep their identity and every
reference to one (the model's, the user's) sees the new value.
"""
from collections import defaultdict
from copy import deepcopy

import lazyscope
from lazyscope import _C
from lazyscope.nn.parameter import Tensor


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


class Optimizer:
    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got a Tensor")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group):
        group = dict(param_group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            group.setdefault(name, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        if set_to_none:
            for group in self.param_groups:
                _C._clear_grads(group["params"])  # one call per group, not a Python loop over parameters
            return
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    with lazyscope.no_grad():
                        p.grad.zero_()

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with lazyscope.enable_grad():
                loss = closure()
        with lazyscope.no_grad():
            for group in self.param_groups:
                self._step_group(group)
        return loss

    def _step_group(self, group):
        """Updates the parameters of ``group`` that have a gradient (runs
        under no_grad). This default calls ``_update`` per parameter; an
        optimizer with a foreach path traces the whole group in one call."""
        for p in group["params"]:
            if p.grad is not None:
                self._update(p, p.grad, self.state[p], group)

    def _update(self, param, grad, state, group):
        """Updates ``param`` in place (runs under no_grad); may set or update
        entries of ``state``."""
        raise NotImplementedError

    @staticmethod
    def _coupled_grad(param, grad, group):
        """The gradient a rule with coupled weight decay steps by: negated
        for ``maximize``, plus weight_decay · param (RMSprop, Adagrad)."""
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            grad = grad + param * group["weight_decay"]
        return grad

    def state_dict(self):
        """{'state': {index: {...}}, 'param_groups': [{..., 'params': [index, …]}]}, PyTorch's layout."""
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                packed["params"].append(index[id(p)])
            groups.append(packed)
        state = {}
        for group in self.param_groups:
            for p in group["params"]:
                if p in self.state and self.state[p]:
                    state[index[id(p)]] = dict(self.state[p])
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError(f"loaded state dict has {len(groups)} parameter groups, the optimizer has "
                             f"{len(self.param_groups)}")
        by_index = {}
        for saved, own in zip(groups, self.param_groups):
            if len(saved["params"]) != len(own["params"]):
                raise ValueError(f"loaded state dict contains a parameter group of {len(saved['params'])} "
                                 f"parameters that doesn't match the size of the optimizer's group "
                                 f"({len(own['params'])})")
            for i, p in zip(saved["params"], own["params"]):
                by_index[i] = p
        self.state = defaultdict(dict)
        for i, values in state_dict["state"].items():
            p = by_index.get(int(i))
            if p is None:
                continue
            moved = {}
            for k, v in values.items():
                if isinstance(v, Tensor) and k != "step":
                    v = v.detach().to(p.device)
                    if v.is_floating_point():
                        # A copy: steps update the moments in place, and the
                        # optimizer the state came from must not see this one's
                        # updates (the engine has no clone(); v * 1.0 is a new
                        # tensor of v's value).
                        v = v.to(p.dtype) * 1.0
                moved[k] = v
            self.state[p] = moved
        for saved, own in zip(groups, self.param_groups):
            for k, v in saved.items():
                if k != "params":
                    own[k] = deepcopy(v)

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(group):
                if k != "params":
                    lines.append(f"    {k}: {group[k]}")
        lines.append(")")
        return "\n".join(lines)
