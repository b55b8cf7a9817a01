"""torch.random's functions: the default generators' state and seeding, and
fork_rng (draws inside the block leave the generators as they were)."""
import contextlib

import lazyscope as _ls


def get_rng_state():
    return _ls.get_rng_state()


def set_rng_state(new_state):
    _ls.set_rng_state(new_state)


def manual_seed(seed):
    _ls.manual_seed(seed)
    return _ls.default_generator if hasattr(_ls, "default_generator") else None


def seed():
    return _ls.seed()


def initial_seed():
    return _ls.initial_seed()


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, device_type="cpu"):
    """Saves both default generators' state on entry and puts it back on exit
    (an exception included), as torch.random.fork_rng. `devices` and
    `device_type` are accepted for PyTorch's signature: the engine's one
    generator serves every device."""
    if not enabled:
        yield
        return
    state = _ls.get_rng_state()
    try:
        yield
    finally:
        _ls.set_rng_state(state)
