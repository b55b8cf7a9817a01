"""torch.autograd.functional: jacobian, hessian, vjp, jvp, hvp and vhp of a
Python function, built on autograd.grad (create_graph=True where a second
derivative is taken). Rows of a Jacobian are one reverse pass each, as
PyTorch's default (vectorize=False); jvp is the double-vjp identity
(J v = d/du [u^T J v]... taken as the gradient of v^T-weighted vjp)."""
from lazyscope import _C
from lazyscope.autograd import grad as _grad

Tensor = _C.Tensor

__all__ = ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"]


def _as_tuple(x):
    return (x, False) if isinstance(x, tuple) else ((x,), True)


def _prepared(inputs, create_graph):
    """Inputs that require grad: detached copies (the caller's tensors untouched), or the
    tensors themselves when create_graph keeps the caller's graph."""
    out = []
    for x in inputs:
        if not isinstance(x, Tensor):
            raise TypeError(f"autograd.functional: expected tensors as inputs, got {type(x).__name__}")
        out.append(x if create_graph and x.requires_grad else x.detach().requires_grad_())
    return tuple(out)


def _grads(outputs, inputs, grad_outputs, create_graph, strict, what):
    gs = _grad(outputs, inputs, grad_outputs, retain_graph=True, create_graph=create_graph, allow_unused=True)
    result = []
    for g, x in zip(gs, inputs):
        if g is None:
            if strict:
                raise RuntimeError(f"{what}: the output is independent of an input (strict=True)")
            g = x.new_zeros(tuple(x.shape)) if hasattr(x, "new_zeros") else x.detach() * 0
        result.append(g if create_graph else g.detach())
    return tuple(result)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product."""
    inputs, single = _as_tuple(inputs)
    xs = _prepared(inputs, create_graph)
    out = func(*xs)
    outs, single_out = _as_tuple(out)
    if v is None:
        if any(o.numel() != 1 for o in outs):
            raise RuntimeError("vjp: v can be omitted only for single-element outputs")
        vs = None
    else:
        vs, _ = _as_tuple(v)
    g = _grads(list(outs), list(xs), list(vs) if vs is not None else None, create_graph, strict, "vjp")
    outs = tuple(o if create_graph else o.detach() for o in outs)
    return (outs[0] if single_out else outs), (g[0] if single else g)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product, by the double-vjp
    identity: J v = d/du (u^T J) v, with u a dummy cotangent."""
    inputs, single = _as_tuple(inputs)
    if v is None:
        if any(x.numel() != 1 for x in inputs):
            raise RuntimeError("jvp: v can be omitted only for single-element inputs")
        vs = tuple(x.detach() * 0 + 1 for x in inputs)
    else:
        vs, _ = _as_tuple(v)
    xs = _prepared(inputs, True)
    out = func(*xs)
    outs, single_out = _as_tuple(out)
    dummies = [o.detach() * 0 for o in outs]
    dummies = [d.requires_grad_() for d in dummies]
    g = _grad(list(outs), list(xs), dummies, retain_graph=True, create_graph=True, allow_unused=True)
    weighted = None
    for gi, vi in zip(g, vs):
        if gi is None:
            continue
        term = (gi * vi).sum()
        weighted = term if weighted is None else weighted + term
    if weighted is None:
        jv = tuple(o.detach() * 0 for o in outs)
    else:
        jv = _grad(weighted, dummies, retain_graph=True, create_graph=create_graph, allow_unused=True)
        jv = tuple((j if j is not None else d.detach() * 0) for j, d in zip(jv, dummies))
        jv = tuple(j if create_graph else j.detach() for j in jv)
    outs = tuple(o if create_graph else o.detach() for o in outs)
    return (outs[0] if single_out else outs), (jv[0] if single_out else jv)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """d func / d inputs: for each output and input, a tensor of shape
    output.shape + input.shape (one reverse pass per output element)."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError(f"jacobian: strategy must be 'reverse-mode' or 'forward-mode', got {strategy!r}")
    import lazyscope
    inputs, single = _as_tuple(inputs)
    xs = _prepared(inputs, create_graph)
    out = func(*xs)
    outs, single_out = _as_tuple(out)
    blocks = []
    for o in outs:
        flat = o.reshape(-1)
        rows = [[] for _ in xs]
        for i in range(flat.shape[0]):
            g = _grads([flat[i]], list(xs), None, create_graph, strict, "jacobian")
            for k, gk in enumerate(g):
                rows[k].append(gk)
        per_input = []
        for k, x in enumerate(xs):
            stacked = lazyscope.stack(rows[k], 0) if rows[k] else x.new_zeros((0, *x.shape))
            per_input.append(stacked.reshape(*o.shape, *x.shape))
        blocks.append(tuple(per_input))
    if single_out:
        return blocks[0][0] if single else blocks[0]
    return tuple(b[0] if single else b for b in blocks)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function: the Jacobian of its gradient."""
    inputs_t, single = _as_tuple(inputs)

    def gradient(*xs):
        out = func(*xs)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("hessian: the function must return a single-element tensor")
        g = _grad(out, list(xs), retain_graph=True, create_graph=True, allow_unused=True)
        g = tuple(gi if gi is not None else x * 0 for gi, x in zip(g, xs))
        return g[0] if single else g

    return jacobian(gradient, inputs, create_graph=create_graph, strict=strict)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H)."""
    inputs_t, single = _as_tuple(inputs)
    xs = _prepared(inputs_t, True)
    out = func(*xs)
    if out.numel() != 1:
        raise RuntimeError("vhp: the function must return a single-element tensor")
    vs, _ = _as_tuple(v) if v is not None else ((None,), True)
    g = _grad(out, list(xs), retain_graph=True, create_graph=True, allow_unused=True)
    weighted = None
    for gi, vi in zip(g, vs):
        if gi is None:
            continue
        term = (gi * (vi if vi is not None else 1.0)).sum()
        weighted = term if weighted is None else weighted + term
    h = _grads([weighted], list(xs), None, create_graph, strict, "vhp")
    value = out if create_graph else out.detach()
    return value, (h[0] if single else h)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v): the Hessian is symmetric, so H v = (v^T H)^T."""
    return vhp(func, inputs, v, create_graph, strict)
