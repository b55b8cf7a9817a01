"""MNIST from its IDX files, and a deterministic synthetic MNIST.

Nothing can be downloaded at run time, so ``MNIST`` reads the files from a
folder and ``SyntheticMNIST`` makes data of the same shape that a small model
can learn (each class is a fixed pattern of blobs; samples jitter and add
noise). Samples are (image, label): a float32 tensor [1, 28, 28] in [0, 1]
(torchvision's ToTensor) and an int.

The IDX format (yann.lecun.com/exdb/mnist): a big-endian header — two zero
bytes, a type code (0x08 ubyte, 0x09 byte, 0x0B int16, 0x0C int32, 0x0D
float32, 0x0E float64) and the number of dimensions — then one big-endian
uint32 per dimension, then the data, row-major.
"""
import gzip
import os

import numpy as np

from lazyscope import _C
from lazyscope.utils.data import Dataset

_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path):
    """Reads an IDX file (plain or gzip, told apart by content) into a NumPy array."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise ValueError(f"{path}: not an IDX file (the first two bytes must be zero)")
    code, ndim = raw[2], raw[3]
    if code not in _IDX_TYPES:
        raise ValueError(f"{path}: unknown IDX data type code 0x{code:02x}")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{path}: truncated IDX header ({ndim} dimensions need {header} bytes, file has {len(raw)})")
    shape = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    dtype = np.dtype(_IDX_TYPES[code])
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) - header != expected:
        raise ValueError(f"{path}: IDX shape {list(shape)} needs {expected} data bytes, the file has "
                         f"{len(raw) - header}")
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))


class _ImageDataset(Dataset):
    """Shared by the MNIST data sets: uint8/float images [N, 28, 28] and labels [N]."""

    def _setup(self, images, labels, transform, target_transform):
        self.data = images
        self.targets = labels.astype(np.int64)
        self.transform, self.target_transform = transform, target_transform

    def __len__(self):
        return len(self.targets)

    def _image(self, idx):
        img = self.data[idx]
        img = img.astype(np.float32) / 255.0 if img.dtype == np.uint8 else img.astype(np.float32)
        return img[..., None, :, :]  # add the channel dimension

    def __getitem__(self, index):
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} out of range for a dataset of {len(self)} samples")
        image = _C.from_numpy(np.ascontiguousarray(self._image(index)), "cpu")
        target = int(self.targets[index])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def _batch(self, indices):
        if self.transform is not None or self.target_transform is not None:
            return None  # transforms run per sample
        idx = np.asarray(indices, dtype=np.int64)
        return (_C.from_numpy(np.ascontiguousarray(self._image(idx)), "cpu"),
                _C.from_numpy(self.targets[idx], "cpu"))


class MNIST(_ImageDataset):
    """MNIST(root, train=True, transform=None, target_transform=None, download=False).

    Reads train-images-idx3-ubyte / train-labels-idx1-ubyte (or the t10k-
    files for train=False), each plain or with .gz, from ``root``,
    ``root/MNIST/raw`` or ``root/raw`` (torchvision's layout).
    """

    resources = {True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
                 False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        if download:
            raise RuntimeError("MNIST: download=True is not supported (LazyScope never downloads); place the IDX "
                               f"files in {root!r} or use SyntheticMNIST")
        self.root, self.train = root, train
        paths = [self._find(name) for name in self.resources[train]]
        missing = [name for name, p in zip(self.resources[train], paths) if p is None]
        if missing:
            folders = [root, os.path.join(root, "MNIST", "raw"), os.path.join(root, "raw")]
            raise FileNotFoundError(f"MNIST: missing {', '.join(missing)} (plain or .gz) in any of "
                                    f"{', '.join(repr(f) for f in folders)}")
        images, labels = read_idx(paths[0]), read_idx(paths[1])
        if images.ndim != 3 or labels.ndim != 1:
            raise ValueError(f"MNIST: expected images [N, H, W] and labels [N], got {list(images.shape)} in "
                             f"{paths[0]} and {list(labels.shape)} in {paths[1]}")
        if len(images) != len(labels):
            raise ValueError(f"MNIST: {len(images)} images in {paths[0]} but {len(labels)} labels in {paths[1]}")
        self._setup(images, labels, transform, target_transform)

    def _find(self, name):
        for folder in (self.root, os.path.join(self.root, "MNIST", "raw"), os.path.join(self.root, "raw")):
            for candidate in (name, name + ".gz"):
                path = os.path.join(folder, candidate)
                if os.path.isfile(path):
                    return path
        return None


class SyntheticMNIST(_ImageDataset):
    """SyntheticMNIST(n=1024, seed=0, train=True, transform=None, target_transform=None, noise=0.3).

    Deterministic for a given (n, seed, train): class c's images are the
    class's fixed pattern of three Gaussian blobs (the same for every seed),
    shifted by up to 2 pixels, scaled in brightness, plus Gaussian noise,
    clipped to [0, 1]. Classes are balanced up to one sample.
    """

    def __init__(self, n=1024, seed=0, train=True, transform=None, target_transform=None, noise=0.3):
        if n <= 0:
            raise ValueError(f"SyntheticMNIST: n must be positive, got {n}")
        patterns = self._patterns()
        rng = np.random.default_rng([seed, 1 if train else 2])
        labels = rng.permutation(np.arange(n) % 10)
        images = np.empty((n, 28, 28), dtype=np.float32)
        for i, label in enumerate(labels):
            dy, dx = rng.integers(-2, 3, size=2)
            img = np.roll(patterns[label], (dy, dx), axis=(0, 1)) * rng.uniform(0.7, 1.0)
            images[i] = img + rng.normal(0.0, noise, (28, 28))
        np.clip(images, 0.0, 1.0, out=images)
        self._setup(images, labels, transform, target_transform)

    @staticmethod
    def _patterns():
        rng = np.random.default_rng(1234)  # fixed: the classes are the same for every seed
        yy, xx = np.mgrid[0:28, 0:28]
        patterns = np.zeros((10, 28, 28), dtype=np.float32)
        for c in range(10):
            for _ in range(3):
                cy, cx = rng.uniform(6, 22, size=2)
                sigma = rng.uniform(2.0, 3.5)
                patterns[c] += np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * sigma ** 2))
        return np.clip(patterns, 0.0, 1.0)
