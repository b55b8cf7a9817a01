"""lazyscope.utils: data loading (utils.data) and SampleGenerator (utils.utils)."""
from lazyscope.utils import utils  # noqa: F401,E402
from lazyscope.utils import checkpoint, data  # noqa: F401
