"""``torch_xla.utils.utils`` → lazyscope.utils.utils."""
from lazyscope.utils.utils import SampleGenerator  # noqa: F401
