"""``torch_xla_py.xla_model`` → lazyscope.core.lazy_model."""
from lazyscope.compat.torch_xla.core.xla_model import *  # noqa: F401,F403
from lazyscope.compat.torch_xla.core.xla_model import xla_device, get_xla_supported_devices  # noqa: F401
