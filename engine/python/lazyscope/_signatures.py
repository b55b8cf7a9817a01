"""Argument-type errors in PyTorch's words.

pybind11 answers a call with arguments of the wrong type with "incompatible
function arguments ... Invoked with: <every argument's repr>" — for a tensor
its whole contents — and a failed cast inside a binding with "Unable to cast
Python instance to C++ type". Every function and Tensor method of the
extension is wrapped once, at import, so that such a call raises a TypeError
that names the function, the signatures it takes (in PyTorch's type names)
and the types it got, never the values.
"""
import re

# pybind11's type names -> PyTorch's documentation words.
_TYPE_WORDS = [
    (re.compile(r"lazyscope\._C\.Tensor"), "Tensor"),
    (re.compile(r"lazyscope\._C\.dtype"), "dtype"),
    (re.compile(r"lazyscope\._C\.device"), "device"),
    (re.compile(r"\bList\[int\]"), "tuple of ints"),
    (re.compile(r"\bList\[Tensor\]"), "tuple of Tensors"),
    (re.compile(r"\bOptional\[([^\[\]]+)\]"), r"\1 (optional)"),
    (re.compile(r"\bobject\b"), "Tensor or Number"),
    (re.compile(r"\*args"), "*size"),
    (re.compile(r"\*\*kwargs"), "**options"),
]


def _words(signature):
    for pattern, word in _TYPE_WORDS:
        signature = pattern.sub(word, signature)
    return signature


def _signatures(name, message, method):
    """The '(a: T, ...)' lines of pybind11's message, in PyTorch's words, without self."""
    out = []
    for line in message.splitlines():
        match = re.match(r"\s*(?:\d+\.\s*)?\w*\((.*)\)\s*->", line)
        if not match:
            continue
        params = match.group(1)
        if method:
            params = re.sub(r"^self(: [^,]*)?(, )?", "", params)
        out.append(f"{name}({_words(params)})")
    return out


def _type_name(value):
    kind = type(value).__name__
    if kind == "Tensor":
        return f"Tensor(dtype={value.dtype}, shape={tuple(value.shape)})"
    if isinstance(value, (list, tuple)) and value:
        inner = sorted({type(v).__name__ for v in value})
        return f"{kind} of {'/'.join(inner)}"
    return kind


def _got(args, kwargs, method):
    shown = [_type_name(a) for a in (args[1:] if method else args)]
    shown += [f"{k}={_type_name(v)}" for k, v in kwargs.items()]
    return ", ".join(shown)


def _is_pybind_type_error(error):
    text = str(error)
    return "incompatible function arguments" in text or "Unable to cast Python instance" in text


def _error(name, fn, method, args, kwargs, text):
    """The TypeError for pybind11's message ``text`` about a call of ``fn`` (called by _C's wrapper)."""
    doc = getattr(fn, "__doc__", "") or ""
    expected = _signatures(name, text if "incompatible" in text else doc, method)
    where = "Tensor." if method else ""
    return TypeError(f"{where}{name}() received an invalid combination of arguments - got "
                     f"({_got(args, kwargs, method)}), but expected one of:\n"
                     + "\n".join(f" * {s}" for s in expected))


def _clean(name, fn, method, module):
    # A C wrapper (_C._clean_errors): one C call on the success path.
    return module._clean_errors(fn, name, method, _error)


def install(module, tensor_class):
    """Wraps every function of `module` (the extension) and every method of `tensor_class` in place."""
    for name, fn in list(vars(module).items()):
        if type(fn).__name__ == "builtin_function_or_method" and not name.startswith(("__", "_clean")):
            setattr(module, name, _clean(name, fn, False, module))
    for name, fn in list(vars(tensor_class).items()):
        if type(fn).__name__ == "instancemethod" and (not name.startswith("__") or name in ("__getitem__",)):
            setattr(tensor_class, name, _clean(name, fn.__func__, True, module))
