"""torch_xla.utils.utils's SampleGenerator."""


class SampleGenerator:
    """Returns ``data`` ``sample_count`` times: a stand-in for a DataLoader that
    feeds synthetic data (the same batch every step)."""

    def __init__(self, data, sample_count):
        if sample_count < 0:
            raise ValueError(f"SampleGenerator: sample_count must be >= 0, got {sample_count}")
        self._data = data
        self._count = sample_count

    def __iter__(self):
        for _ in range(self._count):
            yield self._data

    def __len__(self):
        return self._count
