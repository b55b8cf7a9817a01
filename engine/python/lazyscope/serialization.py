"""lazyscope.save / lazyscope.load: tensors and nested containers of them.

Format (version 1): a zip file holding ``manifest.json`` and one ``.npy`` file
per tensor under ``tensors/``. The manifest is
``{"format": "lazyscope", "version": 1, "root": NODE}`` where NODE is one of

- ``{"type": "tensor", "file": "tensors/0.npy", "dtype": "float32",
  "device": "lazy:0", "requires_grad": false}`` (bfloat16 is stored as float32
  and cast back on load),
- ``{"type": "list"|"tuple", "items": [NODE, …]}``,
- ``{"type": "dict", "ordered": bool, "items": [[KEY, NODE], …]}`` (KEY: a
  NODE of type str, int, float, bool, none or tuple), so OrderedDict state
  dicts and optimizer state dicts with int keys round-trip,
- ``{"type": "int"|"float"|"str"|"bool"|"none", "value": …}`` (floats as
  their repr, so inf and nan survive).

No pickle: nothing in a file can run code. Saving reads lazy tensors through
the host (a sync, like ``.cpu()``). As the seeds document for XLA tensors,
view relationships are not preserved: two saved tensors that viewed the same
data load as independent tensors. ``load(path, device=None)`` puts each tensor
on the device it was saved from (an error names it if that device does not
exist); ``device=`` (or ``map_location=``) puts every tensor on one device.
"""
import json
import zipfile
from collections import OrderedDict

import numpy as np

import lazyscope
from lazyscope import _C

Tensor = _C.Tensor
FORMAT, VERSION = "lazyscope", 1
_DTYPES = {"bool": lazyscope.bool, "uint8": lazyscope.uint8, "int32": lazyscope.int32, "int64": lazyscope.int64,
           "float16": lazyscope.float16, "bfloat16": lazyscope.bfloat16, "float32": lazyscope.float32,
           "float64": lazyscope.float64}
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}


def save(obj, f):
    """Saves ``obj`` (tensors, numbers, strings, None, and lists, tuples and dicts of them) to ``f`` (a path or a binary file)."""
    arrays = []

    def encode(x, where):
        if isinstance(x, Tensor):
            dtype = _DTYPE_NAMES[x.dtype]
            host = x.detach()
            if x.dtype == lazyscope.bfloat16:
                host = host.to(lazyscope.float32)
            arrays.append(host.numpy())
            return {"type": "tensor", "file": f"tensors/{len(arrays) - 1}.npy", "dtype": dtype,
                    "device": str(x.device), "requires_grad": bool(x.requires_grad)}
        if x is None:
            return {"type": "none", "value": None}
        if isinstance(x, bool):
            return {"type": "bool", "value": x}
        if isinstance(x, (int, np.integer)):
            return {"type": "int", "value": int(x)}
        if isinstance(x, (float, np.floating)):
            return {"type": "float", "value": repr(float(x))}
        if isinstance(x, str):
            return {"type": "str", "value": x}
        if isinstance(x, (list, tuple)):
            return {"type": "tuple" if isinstance(x, tuple) else "list",
                    "items": [encode(v, f"{where}[{i}]") for i, v in enumerate(x)]}
        if isinstance(x, dict):
            return {"type": "dict", "ordered": isinstance(x, OrderedDict),
                    "items": [[encode(k, f"{where} key"), encode(v, f"{where}[{k!r}]")] for k, v in x.items()]}
        raise TypeError(f"lazyscope.save: cannot save {type(x).__name__} at {where} (save tensors, numbers, strings, "
                        f"None, and lists, tuples and dicts of them; for a model save model.state_dict())")

    manifest = {"format": FORMAT, "version": VERSION, "root": encode(obj, "the object")}
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
        z.writestr("manifest.json", json.dumps(manifest))
        for i, a in enumerate(arrays):
            with z.open(f"tensors/{i}.npy", "w") as out:
                np.save(out, a, allow_pickle=False)


def load(f, device=None, map_location=None, weights_only=True):
    """Loads what ``save`` wrote. ``device``/``map_location``: put every tensor there
    (a device or a string); by default each goes back to the device it was saved from."""
    if device is not None and map_location is not None:
        raise ValueError("lazyscope.load: give device or map_location, not both")
    target = device if device is not None else map_location
    if target is not None and not isinstance(target, (str, lazyscope.device)):
        raise TypeError(f"lazyscope.load: map_location must be a device or a string, got {type(target).__name__}")
    name = f if isinstance(f, str) else getattr(f, "name", "<file>")
    try:
        z = zipfile.ZipFile(f, "r")
    except zipfile.BadZipFile:
        raise ValueError(f"lazyscope.load: {name} is not a lazyscope save file (not a zip archive)") from None
    with z:
        try:
            manifest = json.loads(z.read("manifest.json"))
        except KeyError:
            raise ValueError(f"lazyscope.load: {name} has no manifest.json; not a lazyscope save file") from None
        if manifest.get("format") != FORMAT:
            raise ValueError(f"lazyscope.load: {name} is not a lazyscope save file")
        if manifest.get("version", 0) > VERSION:
            raise ValueError(f"lazyscope.load: {name} has format version {manifest['version']}; this build reads "
                             f"up to version {VERSION}")
        available = {"cpu"} | {f"lazy:{i}" for i in range(_C.device_count())}

        def decode(node):
            kind = node["type"]
            if kind == "tensor":
                with z.open(node["file"]) as src:
                    array = np.load(src, allow_pickle=False)
                dev = str(target) if target is not None else node["device"]
                if dev not in available:
                    raise RuntimeError(f"lazyscope.load: a tensor in {name} was saved from {dev}, which does not "
                                       f"exist here (devices: {', '.join(sorted(available))}); pass "
                                       f"device= or map_location= to load it elsewhere")
                t = _C.from_numpy(array, dev)
                if node["dtype"] == "bfloat16":
                    t = t.to(lazyscope.bfloat16)
                return t.requires_grad_() if node.get("requires_grad") else t
            if kind in ("list", "tuple"):
                items = [decode(v) for v in node["items"]]
                return tuple(items) if kind == "tuple" else items
            if kind == "dict":
                out = OrderedDict() if node.get("ordered") else {}
                for k, v in node["items"]:
                    out[decode(k)] = decode(v)
                return out
            if kind == "float":
                return float(node["value"])  # float() reads repr's 'inf' and 'nan' too
            if kind in ("int", "str", "bool", "none"):
                return node["value"]
            raise ValueError(f"lazyscope.load: unknown node type {kind!r} in {name}")

        return decode(manifest["root"])


def _copy_tensor(t, memo=None):
    """copy.copy and copy.deepcopy of a tensor: a new tensor with its own data
    (the seeds' discrepancy 3: a copy is always deep). On a lazy device the copy
    is a graph op when the engine has clone(), a host round trip otherwise."""
    clone = getattr(t, "clone", None)
    with lazyscope.no_grad():
        out = clone() if clone is not None else _C.from_numpy(t.detach().numpy(), str(t.device))
    out = out.detach()
    if t.requires_grad:
        out.requires_grad_()
    if memo is not None:
        memo[id(t)] = out
    return out


if not hasattr(Tensor, "__deepcopy__"):
    Tensor.__copy__ = _copy_tensor
    Tensor.__deepcopy__ = _copy_tensor
