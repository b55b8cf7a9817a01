"""torch.utils.checkpoint.checkpoint: here the function simply runs.

PyTorch's checkpoint trades memory for compute by recomputing the function in
backward; the values and gradients are the same as a plain call, which is
what this gives (without the memory saving)."""


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default", debug=False,
               preserve_rng_state=True, **kwargs):
    return function(*args, **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):  # noqa: A002
    modules = list(functions.children()) if hasattr(functions, "children") else list(functions)
    for module in modules:
        input = module(input)
    return input
