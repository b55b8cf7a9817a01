"""lazyscope.utils: data loading (utils.data), SampleGenerator (utils.utils), checkpoint, and
tensorboard's SummaryWriter (into LazyScope's history)."""
from lazyscope.utils import utils  # noqa: F401,E402
from lazyscope.utils import checkpoint, data, tensorboard  # noqa: F401
