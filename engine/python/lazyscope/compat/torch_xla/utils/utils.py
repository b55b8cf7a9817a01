"""``torch_xla.utils.utils``: the small helpers PyTorch/XLA scripts import."""
import os
import shutil
import sys
import tempfile
import time

from lazyscope.utils.utils import SampleGenerator  # noqa: F401


class Cleaner:
    """Calls ``func`` when collected."""

    def __init__(self, func):
        self.func = func

    def __del__(self):
        self.func()


class TmpFolder:
    """A temporary folder removed when this object is collected."""

    def __init__(self):
        self.name = tempfile.mkdtemp()
        self.cleaner = Cleaner(lambda: shutil.rmtree(self.name, ignore_errors=True))


class LazyProperty:
    """A value computed by ``gen_fn`` on first use of ``.value``."""

    def __init__(self, gen_fn):
        self._gen_fn = gen_fn
        self._computed = False
        self._value = None

    @property
    def value(self):
        if not self._computed:
            self._value = self._gen_fn()
            self._computed = True
        return self._value


class FnDataGenerator:
    """``count`` batches of ``gen_tensor(batch_size, *dims)`` with targets ``func(data)``."""

    def __init__(self, func, batch_size, gen_tensor, dims=None, count=1):
        self._func, self._batch_size, self._gen_tensor = func, batch_size, gen_tensor
        self._dims = list(dims) if dims else [1]
        self._count = count

    def __len__(self):
        return self._count

    def __iter__(self):
        for _ in range(self._count):
            data = self._gen_tensor(self._batch_size, *self._dims)
            yield data, self._func(data)


def as_list(t):
    return t if isinstance(t, (tuple, list)) else [t]


def getenv_as(name, type, defval=None):  # noqa: A002  (torch_xla's names)
    env = os.environ.get(name)
    if env is None:
        return defval
    return bool(int(env)) if type is bool else type(env)


def check_env_flag(name, default=""):
    return os.getenv(name, default).upper() in ("ON", "1", "YES", "TRUE", "Y")


def _children(value):
    if isinstance(value, dict):
        return [x for kv in value.items() for x in kv]
    if isinstance(value, (list, tuple, set)):
        return list(value)
    return list(vars(value).values()) if hasattr(value, "__dict__") else []


def for_each_instance(value, select_fn, fn):
    """Calls ``fn`` on every object nested in ``value`` (dicts, sequences, attributes) that
    ``select_fn`` selects (a type, compared exactly, or a predicate)."""
    selected = select_fn(value) if callable(select_fn) and not isinstance(select_fn, type) else type(value) == select_fn
    if selected:
        fn(value)
        return
    for child in _children(value):
        for_each_instance(child, select_fn, fn)


def for_each_instance_rewrite(value, select_fn, fn):
    """``value`` rebuilt with every selected object replaced by ``fn(object)``."""
    selected = select_fn(value) if callable(select_fn) and not isinstance(select_fn, type) else type(value) == select_fn
    if selected:
        return fn(value)
    if isinstance(value, dict):
        return {k: for_each_instance_rewrite(v, select_fn, fn) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(for_each_instance_rewrite(x, select_fn, fn) for x in value))
    if isinstance(value, (list, tuple, set)):
        return type(value)(for_each_instance_rewrite(x, select_fn, fn) for x in value)
    return value


def shape(inputs):
    """The nesting shape of lists/tuples: [len, inner...]; every element must nest alike."""
    if not isinstance(inputs, (list, tuple)):
        return []
    shapes = [shape(x) for x in inputs]
    if any(s != shapes[0] for s in shapes):
        raise ValueError(f"shape: elements nest differently: {shapes}")
    return [len(inputs)] + (shapes[0] if shapes else [])


def flatten_nested_tuple(inputs):
    if not isinstance(inputs, (list, tuple)):
        return (inputs,)
    return tuple(x for item in inputs for x in flatten_nested_tuple(item))


def list_copy_append(ilist, item):
    return list(ilist) + [item]


def null_print(*args, **kwargs):
    return None


def eprint(*args, **kwargs):
    print(*args, file=sys.stderr, **kwargs)


def get_print_fn(debug=None):
    if debug is None:
        debug = int(os.environ.get("DEBUG", "0"))
    return eprint if debug else null_print


def timed(fn, msg="", printfn=eprint):
    printfn = printfn or get_print_fn()
    start = time.time()
    result = fn()
    printfn("{}{:.3f}ms".format(msg, 1000.0 * (time.time() - start)))
    return result


class TimedScope:
    """Prints the time spent inside the ``with`` block (unless set_error was called)."""

    def __init__(self, msg="", printfn=eprint):
        self._msg, self._printfn, self._error = msg, printfn or get_print_fn(), None

    def __enter__(self):
        self._start = time.time()
        return self

    def __exit__(self, *exc):
        if self._error is None:
            self._printfn("{}{:.3f}ms".format(self._msg, 1000.0 * (time.time() - self._start)))

    def set_error(self, error):
        self._error = error


STATUS = {name: ("supported", "") for name in (
    "SampleGenerator", "Cleaner", "TmpFolder", "LazyProperty", "FnDataGenerator", "as_list", "getenv_as",
    "check_env_flag", "for_each_instance", "for_each_instance_rewrite", "shape", "flatten_nested_tuple",
    "list_copy_append", "null_print", "eprint", "get_print_fn", "timed", "TimedScope")}
