"""torch.utils.data: datasets, samplers' behaviour and the DataLoader.

With num_workers=0 the loader runs in the calling thread; with
num_workers > 0, worker threads (not processes: the dataset is shared, nothing
is pickled) fetch and collate whole batches ahead, and batches come out in
sampler order, so the results equal num_workers=0's. For background upload
to lazy devices use
``lazyscope.distributed.parallel_loader.ParallelLoader``. Datasets that can
fetch many samples at once (TensorDataset, the MNIST data sets) implement
``_batch(indices)``, which the default collation uses to build a batch with
one array copy instead of stacking samples one by one.
"""
import numbers
from collections.abc import Mapping, Sequence

import numpy as np

import lazyscope
from lazyscope import _C

Tensor = _C.Tensor


class Dataset:
    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the index-th rows of each tensor (all share dim 0)."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: needs at least one tensor")
        n = tensors[0].shape[0]
        for i, t in enumerate(tensors):
            if t.shape[0] != n:
                raise ValueError(f"TensorDataset: size mismatch between tensors: tensor 0 has {n} rows, "
                                 f"tensor {i} has {t.shape[0]}")
        self.tensors = tensors
        self._arrays = None

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]

    def _batch(self, indices):
        if any(t.dtype == lazyscope.bfloat16 for t in self.tensors):
            return None
        if self._arrays is None:  # one host copy, then fancy indexing per batch
            self._arrays = [t.numpy() for t in self.tensors]
        idx = np.asarray(indices, dtype=np.int64)
        return tuple(_C.from_numpy(a[idx], str(t.device)) for a, t in zip(self._arrays, self.tensors))


class Subset(Dataset):
    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)

    def _batch(self, indices):
        inner = getattr(self.dataset, "_batch", None)
        return inner([self.indices[i] for i in indices]) if inner else None


class ConcatDataset(Dataset):
    def __init__(self, datasets):
        self.datasets = list(datasets)
        self.cumulative = np.cumsum([len(d) for d in self.datasets]).tolist()

    def __len__(self):
        return self.cumulative[-1] if self.cumulative else 0

    def __getitem__(self, idx):
        if idx < 0:
            idx += len(self)
        if not 0 <= idx < len(self):
            raise IndexError(f"index {idx} out of range for a dataset of {len(self)} samples")
        d = int(np.searchsorted(self.cumulative, idx, side="right"))
        return self.datasets[d][idx - (self.cumulative[d - 1] if d else 0)]


def _generator(generator):
    if generator is None:
        # Derived from lazyscope's generator, so manual_seed makes shuffling repeatable.
        return np.random.default_rng(lazyscope._rng.integers(2 ** 63))
    if isinstance(generator, numbers.Integral):
        return np.random.default_rng(int(generator))
    if isinstance(generator, np.random.Generator):
        return generator
    if isinstance(generator, lazyscope.Generator):
        return generator._rng
    raise TypeError(f"generator must be None, an int seed, a lazyscope.Generator or a numpy.random.Generator, got "
                    f"{type(generator).__name__}")


def random_split(dataset, lengths, generator=None):
    """Splits into non-overlapping Subsets of the given lengths (or fractions summing to 1)."""
    n = len(dataset)
    if all(isinstance(x, float) for x in lengths) and abs(sum(lengths) - 1) < 1e-9:
        counts = [int(np.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise ValueError(f"random_split: sum of input lengths ({sum(lengths)}) does not equal the length of the "
                         f"input dataset ({n})")
    perm = _generator(generator).permutation(n).tolist()
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, perm[start:start + length]))
        start += length
    return out


def default_collate(batch):
    """Stacks a list of samples PyTorch's way: tensors are stacked, NumPy arrays
    become tensors, ints int64, floats float64, bools bool, and tuples, lists and
    dicts are collated field by field."""
    first = batch[0]
    if isinstance(first, Tensor):
        return lazyscope.stack(list(batch))
    if isinstance(first, np.ndarray):
        return _C.from_numpy(np.stack(batch), "cpu")
    if isinstance(first, (bool, np.bool_)):
        return lazyscope.tensor(batch, dtype=lazyscope.bool)
    if isinstance(first, numbers.Integral):
        return lazyscope.tensor(batch, dtype=lazyscope.int64)
    if isinstance(first, numbers.Real):
        return lazyscope.tensor(batch, dtype=lazyscope.float64)
    if isinstance(first, (str, bytes)):
        return list(batch)
    if isinstance(first, Mapping):
        return {k: default_collate([b[k] for b in batch]) for k in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(first, Sequence):
        sizes = {len(b) for b in batch}
        if len(sizes) != 1:
            raise RuntimeError("default_collate: each element in the batch should be of equal size")
        fields = [default_collate(list(s)) for s in zip(*batch)]
        return tuple(fields) if isinstance(first, tuple) else fields
    raise TypeError(f"default_collate: batch must contain tensors, NumPy arrays, numbers, dicts or lists; "
                    f"found {type(first).__name__}")


class DataLoader:
    """Batches of a dataset: batch_size, shuffle (with ``generator``: an int seed
    or a numpy Generator; reshuffled each epoch), drop_last, collate_fn."""

    def __init__(self, dataset, batch_size=1, shuffle=False, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 generator=None, prefetch_factor=None, persistent_workers=False):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers option should be non-negative, got {num_workers}")
        if prefetch_factor is not None and num_workers == 0:
            raise ValueError("DataLoader: prefetch_factor option could only be specified in multiprocessing; "
                             "let num_workers > 0 to enable multiprocessing")
        self.num_workers, self.worker_init_fn = num_workers, worker_init_fn
        self.prefetch_factor = 2 if prefetch_factor is None else prefetch_factor
        if batch_size is not None and batch_size <= 0:
            raise ValueError(f"DataLoader: batch_size should be a positive integer, got {batch_size}")
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None or drop_last):
            raise ValueError("DataLoader: batch_sampler option is mutually exclusive with batch_size, shuffle, "
                             "sampler, and drop_last")
        self.dataset, self.batch_size, self.shuffle = dataset, batch_size, shuffle
        self.sampler, self.batch_sampler, self.drop_last = sampler, batch_sampler, drop_last
        self.collate_fn = collate_fn
        self._rng = _generator(generator) if shuffle else None

    def _indices(self):
        if self.sampler is not None:
            return list(self.sampler)
        n = len(self.dataset)
        return self._rng.permutation(n).tolist() if self.shuffle else list(range(n))

    def _batches(self):
        if self.batch_sampler is not None:
            yield from self.batch_sampler
            return
        indices = self._indices()
        if self.batch_size is None:
            for i in indices:
                yield i
            return
        for start in range(0, len(indices), self.batch_size):
            chunk = indices[start:start + self.batch_size]
            if len(chunk) < self.batch_size and self.drop_last:
                return
            yield chunk

    def _load(self, chunk):
        if self.batch_size is None and self.batch_sampler is None:
            sample = self.dataset[chunk]
            return self.collate_fn(sample) if self.collate_fn else sample
        fast = getattr(self.dataset, "_batch", None) if self.collate_fn is None else None
        batch = fast(chunk) if fast is not None else None
        if batch is None:
            samples = [self.dataset[i] for i in chunk]
            batch = (self.collate_fn or default_collate)(samples)
        return batch

    def __iter__(self):
        if self.num_workers == 0:
            for chunk in self._batches():
                yield self._load(chunk)
            return
        yield from self._threaded()

    def _threaded(self):
        """Batches fetched by worker threads, at most num_workers * prefetch_factor ahead, in order."""
        import collections
        import itertools
        import threading
        from concurrent.futures import ThreadPoolExecutor

        ids = itertools.count()
        lock = threading.Lock()

        def init():
            with lock:
                worker_id = next(ids)
            if self.worker_init_fn is not None:
                self.worker_init_fn(worker_id)

        pending = collections.deque()
        chunks = self._batches()
        with ThreadPoolExecutor(self.num_workers, thread_name_prefix="lazyscope-dataloader",
                                initializer=init) as pool:
            try:
                for chunk in itertools.islice(chunks, self.num_workers * self.prefetch_factor):
                    pending.append(pool.submit(self._load, chunk))
                while pending:
                    batch = pending.popleft().result()  # a worker's exception is raised here, in order
                    for chunk in itertools.islice(chunks, 1):
                        pending.append(pool.submit(self._load, chunk))
                    yield batch
            finally:
                for future in pending:
                    future.cancel()

    def __len__(self):
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        n = len(self.sampler) if self.sampler is not None else len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


from lazyscope.utils.data import datasets  # noqa: E402,F401

__all__ = ["Dataset", "TensorDataset", "Subset", "ConcatDataset", "DataLoader", "default_collate", "random_split"]
