"""torch.amp as training scripts use it: autocast and GradScaler.

autocast does not change precision here: every op runs in its tensors' own
dtype (LazyScope's CPU backend has no mixed-precision kernels; its bf16 mode
is the LAZYSCOPE_BF16 setting). The context manager and decorator check their
arguments as PyTorch does, so a script written for mixed precision runs
unchanged, in float32.

GradScaler is PyTorch's algorithm: the loss is multiplied by the scale, the
gradients divided by it before the optimizer step, a step whose gradients
hold an inf or NaN is skipped and the scale backed off, and after
growth_interval good steps the scale grows. Finding a non-finite gradient
reads one number from the device (a sync), as PyTorch's does."""
import contextlib
import functools
import math

import lazyscope as _ls

_FLOATS_FOR_AUTOCAST = ("float16", "bfloat16")


class autocast(contextlib.ContextDecorator):  # noqa: N801  (PyTorch's name)
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None):
    accepted and checked; ops keep running in their own dtypes."""

    def __init__(self, device_type="cpu", dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"autocast: device_type must be a string such as 'cpu' or 'cuda', got {device_type!r}")
        if dtype is not None and getattr(dtype, "name", str(dtype)).split(".")[-1] not in _FLOATS_FOR_AUTOCAST:
            raise ValueError(f"autocast: dtype must be float16 or bfloat16, got {dtype}")
        self.device_type, self.fast_dtype, self._enabled = device_type, dtype, bool(enabled)
        self._previous = None

    def __enter__(self):
        global _active
        self._previous, _active = _active, self._enabled
        return self

    def __exit__(self, *exc):
        global _active
        _active = self._previous
        return False


_active = False


def is_autocast_enabled(device_type=None):
    """Whether an enabled autocast block is open (it changes no precision here)."""
    return _active


class GradScaler:
    """torch.amp.GradScaler(device="cuda", init_scale=2.**16, growth_factor=2.0,
    backoff_factor=0.5, growth_interval=2000, enabled=True)."""

    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if growth_factor <= 1.0 or not 0.0 < backoff_factor < 1.0 or init_scale <= 0 or growth_interval < 1:
            raise ValueError(f"GradScaler: needs growth_factor > 1, 0 < backoff_factor < 1, init_scale > 0 and "
                             f"growth_interval >= 1, got {growth_factor}, {backoff_factor}, {init_scale}, "
                             f"{growth_interval}")
        self._enabled = bool(enabled)
        self._scale = float(init_scale)
        self._growth_factor, self._backoff_factor = float(growth_factor), float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._unscaled = {}   # id(optimizer) -> found a non-finite gradient
        self._found_inf = None

    def is_enabled(self):
        return self._enabled

    def get_scale(self):
        return self._scale if self._enabled else 1.0

    def scale(self, outputs):
        """outputs (a tensor, or tensors in lists/tuples/dicts) times the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if isinstance(outputs, dict):
            return {k: self.scale(v) for k, v in outputs.items()}
        return outputs * self._scale

    def unscale_(self, optimizer):
        """Divides the optimizer's gradients by the scale (once per step) and notes a non-finite one."""
        if not self._enabled:
            return
        if id(optimizer) in self._unscaled:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        inv = 1.0 / self._scale
        finite = None
        with _ls.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.grad.mul_(inv)
                    ok = p.grad.isfinite().all()
                    finite = ok if finite is None else finite & ok
        self._unscaled[id(optimizer)] = finite is not None and not bool(finite.item())

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step() unless a gradient is inf or NaN (then skipped); unscales first if not done."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if id(optimizer) not in self._unscaled:
            self.unscale_(optimizer)
        if self._unscaled[id(optimizer)]:
            self._found_inf = True
            return None
        self._found_inf = bool(self._found_inf)
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        """Backs the scale off after a skipped step, grows it after growth_interval good ones."""
        if not self._enabled:
            return
        if new_scale is not None:
            value = float(new_scale.item() if hasattr(new_scale, "item") else new_scale)
            if not (value > 0 and math.isfinite(value)):
                raise ValueError(f"GradScaler.update: new_scale must be a positive finite number, got {value}")
            self._scale = value
        elif self._found_inf:
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        elif self._found_inf is not None:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale *= self._growth_factor
                self._growth_tracker = 0
        self._unscaled.clear()
        self._found_inf = None

    def state_dict(self):
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if "scale" not in state_dict:
            raise RuntimeError("GradScaler.load_state_dict: the state dict has no 'scale' (saved from a disabled "
                               "GradScaler?)")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict.get("growth_factor", self._growth_factor))
        self._backoff_factor = float(state_dict.get("backoff_factor", self._backoff_factor))
        self._growth_interval = int(state_dict.get("growth_interval", self._growth_interval))
        self._growth_tracker = int(state_dict.get("_growth_tracker", 0))


def custom_fwd(fwd=None, *, device_type="cpu", cast_inputs=None):
    """A decorator that changes nothing (autocast changes no precision here)."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    return fwd


def custom_bwd(bwd=None, *, device_type="cpu"):
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    return bwd
