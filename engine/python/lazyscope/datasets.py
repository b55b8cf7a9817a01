"""lazyscope.datasets: MNIST (IDX files) and SyntheticMNIST; see lazyscope.utils.data.datasets."""
from lazyscope.utils.data.datasets import MNIST, SyntheticMNIST, read_idx  # noqa: F401
