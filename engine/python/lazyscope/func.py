"""torch.func: grad, grad_and_value, vjp, jacrev, jacfwd, hessian and vmap.

The transforms are built on autograd (autograd.grad with create_graph where
derivatives nest) rather than on a functional tracer. vmap runs the function
once per slice of the mapped dims and stacks the results: the same values as
PyTorch's batching rules, each slice traced (on a lazy device, one graph for
the whole batch, compiled once per batch size)."""
from lazyscope import _C
from lazyscope.autograd import functional as _functional
from lazyscope.autograd import grad as _grad

Tensor = _C.Tensor

__all__ = ["grad", "grad_and_value", "vjp", "jacrev", "jacfwd", "hessian", "vmap"]


def _argnums(argnums, n):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for a in nums:
        if not -n <= a < n:
            raise ValueError(f"argnums {a} is out of range for {n} positional arguments")
    return tuple(a % n for a in nums), isinstance(argnums, int)


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (d func / d args[argnums], func(args)); func returns a scalar (and aux with has_aux)."""
    def wrapper(*args, **kwargs):
        nums, single = _argnums(argnums, len(args))
        args = list(args)
        for a in nums:
            args[a] = args[a].detach().requires_grad_() if not args[a].requires_grad else args[a]
        out = func(*args, **kwargs)
        aux = None
        if has_aux:
            if not isinstance(out, tuple) or len(out) != 2:
                raise RuntimeError("grad_and_value(has_aux=True): the function must return (output, aux)")
            out, aux = out
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError(f"grad: the function must return a single-element tensor, got "
                               f"{tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__}")
        gs = _grad(out, [args[a] for a in nums], create_graph=True, allow_unused=True)
        gs = tuple(g if g is not None else args[a] * 0 for g, a in zip(gs, nums))
        g = gs[0] if single else gs
        return (g, (out, aux)) if has_aux else (g, out)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """d func / d args[argnums] as a function (nestable: grad(grad(f)) is the second derivative)."""
    both = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, value = both(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func, *primals, has_aux=False):
    """(func(primals), vjp_fn): vjp_fn(cotangents) gives the cotangents' pull-back per primal."""
    xs = tuple(p.detach().requires_grad_() for p in primals)
    out = func(*xs)
    aux = None
    if has_aux:
        out, aux = out

    def vjp_fn(*cotangents):
        outs = list(out) if isinstance(out, tuple) else [out]
        cots = list(cotangents)
        gs = _grad(outs, list(xs), cots, retain_graph=True, create_graph=True, allow_unused=True)
        return tuple(g if g is not None else x * 0 for g, x in zip(gs, xs))
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def jacrev(func, argnums=0, has_aux=False):
    """The Jacobian of func with respect to args[argnums] (output.shape + input.shape), by reverse passes."""
    if has_aux:
        raise NotImplementedError("jacrev(has_aux=True) is not supported; return the aux separately")

    def wrapper(*args):
        nums, single = _argnums(argnums, len(args))

        def partial(*chosen):
            full = list(args)
            for a, v in zip(nums, chosen):
                full[a] = v
            return func(*full)
        chosen = tuple(args[a] for a in nums)
        jac = _functional.jacobian(partial, chosen, create_graph=True)  # chosen a tuple: a tuple per input
        if jac and isinstance(jac[0], tuple):  # several outputs: per output, per input
            return tuple(block[0] if single else block for block in jac)
        return jac[0] if single else jac
    return wrapper


jacfwd = jacrev  # the same Jacobian; built by reverse passes here


def hessian(func, argnums=0):
    return jacrev(jacrev(func, argnums), argnums)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """func mapped over dim in_dims of its arguments (None: not mapped),
    results stacked at out_dims: func called once per slice."""
    def wrapper(*args):
        import lazyscope
        dims = in_dims if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
        if len(dims) != len(args):
            raise ValueError(f"vmap: in_dims has {len(dims)} entries for {len(args)} arguments")
        sizes = {a.shape[d] for a, d in zip(args, dims) if d is not None}
        if not sizes:
            raise ValueError("vmap: at least one argument must be mapped (in_dims not None)")
        if len(sizes) != 1:
            raise ValueError(f"vmap: the mapped dims have different sizes {sorted(sizes)}")
        n = sizes.pop()
        results = []
        for i in range(n):
            sliced = [a.select(d, i) if d is not None else a for a, d in zip(args, dims)]
            results.append(func(*sliced))
        first = results[0]
        if isinstance(first, tuple):
            outs = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(first)
            return tuple(lazyscope.stack([r[k] for r in results], outs[k]) for k in range(len(first)))
        return lazyscope.stack(results, out_dims)
    return wrapper
