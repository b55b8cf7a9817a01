"""utils.data, the MNIST IDX reader (against files this test writes),
SyntheticMNIST, and lazyscope.save/load."""
import gzip
import struct
from collections import OrderedDict

import numpy as np
import pytest

import lazyscope
from lazyscope import nn
from lazyscope.datasets import MNIST, SyntheticMNIST, read_idx
from lazyscope.utils.data import DataLoader, Dataset, TensorDataset, default_collate, random_split


def write_idx(path, array, code=0x08, compress=False):
    dtype = {0x08: ">u1", 0x0C: ">i4", 0x0D: ">f4"}[code]
    raw = struct.pack(">BBBB", 0, 0, code, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    raw += np.asarray(array, dtype=dtype).tobytes()
    with open(path, "wb") as f:
        f.write(gzip.compress(raw) if compress else raw)


@pytest.mark.parametrize("compress", [False, True])
def test_mnist_reads_idx_files(tmp_path, compress):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (5, 28, 28), dtype=np.uint8)
    labels = np.array([3, 1, 4, 1, 5], dtype=np.uint8)
    suffix = ".gz" if compress else ""
    write_idx(tmp_path / f"t10k-images-idx3-ubyte{suffix}", images, compress=compress)
    write_idx(tmp_path / f"t10k-labels-idx1-ubyte{suffix}", labels, compress=compress)
    ds = MNIST(str(tmp_path), train=False)
    assert len(ds) == 5
    img, label = ds[2]
    assert img.shape == (1, 28, 28) and img.dtype == lazyscope.float32 and label == 4
    np.testing.assert_allclose(img.numpy()[0], images[2] / 255.0, rtol=1e-6)
    x, y = next(iter(DataLoader(ds, batch_size=4)))
    assert x.shape == (4, 1, 28, 28) and y.dtype == lazyscope.int64
    np.testing.assert_array_equal(y.numpy(), [3, 1, 4, 1])


def test_idx_reader_handles_other_types_and_rejects_bad_files(tmp_path):
    a = np.arange(6, dtype=np.int32).reshape(2, 3) - 2
    write_idx(tmp_path / "ints", a, code=0x0C)
    np.testing.assert_array_equal(read_idx(tmp_path / "ints"), a)
    f = np.linspace(0, 1, 4, dtype=np.float32)
    write_idx(tmp_path / "floats", f, code=0x0D)
    np.testing.assert_array_equal(read_idx(tmp_path / "floats"), f)
    (tmp_path / "bad").write_bytes(b"\x01\x02\x08\x01")
    with pytest.raises(ValueError, match="not an IDX file"):
        read_idx(tmp_path / "bad")
    raw = (tmp_path / "ints").read_bytes()
    (tmp_path / "short").write_bytes(raw[:-4])
    with pytest.raises(ValueError, match="needs 24 data bytes, the file has 20"):
        read_idx(tmp_path / "short")


def test_mnist_names_missing_files(tmp_path):
    write_idx(tmp_path / "train-images-idx3-ubyte", np.zeros((1, 28, 28), dtype=np.uint8))
    with pytest.raises(FileNotFoundError, match="missing train-labels-idx1-ubyte"):
        MNIST(str(tmp_path))
    with pytest.raises(RuntimeError, match="never downloads"):
        MNIST(str(tmp_path), download=True)


def test_synthetic_mnist_is_deterministic_balanced_and_learnable():
    a, b = SyntheticMNIST(200, seed=3), SyntheticMNIST(200, seed=3)
    np.testing.assert_array_equal(a.data, b.data)
    assert not np.array_equal(a.data, SyntheticMNIST(200, seed=4).data)
    assert np.bincount(a.targets).tolist() == [20] * 10
    img, label = a[0]
    assert img.shape == (1, 28, 28) and 0.0 <= img.numpy().min() and img.numpy().max() <= 1.0
    # Nearest class mean on held-out data is far above chance: the classes are separable.
    means = np.stack([a.data[a.targets == c].mean(0) for c in range(10)])
    test = SyntheticMNIST(100, seed=5, train=False)
    pred = np.argmin(((test.data[:, None] - means[None]) ** 2).sum((2, 3)), axis=1)
    assert (pred == test.targets).mean() > 0.8


def test_a_small_model_learns_synthetic_mnist():
    lazyscope.manual_seed(0)
    loader = DataLoader(SyntheticMNIST(512, seed=0), batch_size=64, shuffle=True, generator=1, drop_last=True)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10)).to("lazy:0")
    opt = lazyscope.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(3):
        for x, y in loader:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x.to("lazy:0")), y.to("lazy:0"))
            loss.backward()
            lazyscope.core.lazy_model.optimizer_step(opt, barrier=True)
            losses.append(loss.item())
    assert np.mean(losses[-4:]) < 0.5 * np.mean(losses[:2])


def test_dataloader_batches_shuffle_and_drop_last():
    x = lazyscope.tensor(np.arange(10, dtype=np.float32).reshape(10, 1))
    y = lazyscope.tensor(np.arange(10))
    ds = TensorDataset(x, y)
    batches = list(DataLoader(ds, batch_size=4))
    assert [b[0].shape[0] for b in batches] == [4, 4, 2] and len(DataLoader(ds, batch_size=4)) == 3
    assert len(list(DataLoader(ds, batch_size=4, drop_last=True))) == 2 == len(DataLoader(ds, 4, drop_last=True))
    first = [b[1].numpy().tolist() for b in DataLoader(ds, batch_size=5, shuffle=True, generator=7)]
    again = [b[1].numpy().tolist() for b in DataLoader(ds, batch_size=5, shuffle=True, generator=7)]
    assert first == again and sorted(sum(first, [])) == list(range(10)) and sum(first, []) != list(range(10))
    loader = DataLoader(ds, batch_size=10, shuffle=True, generator=7)
    assert list(loader)[0][1].numpy().tolist() != list(loader)[0][1].numpy().tolist()  # reshuffled each epoch
    with pytest.raises(ValueError, match="size mismatch"):
        TensorDataset(x, lazyscope.zeros(3))


def test_default_collate_stacks_numbers_tuples_and_dicts():
    class Samples(Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return {"x": lazyscope.tensor([float(i), 2.0 * i]), "n": i, "w": 0.5 * i, "name": f"s{i}"}
    batch = next(iter(DataLoader(Samples(), batch_size=3)))
    np.testing.assert_array_equal(batch["x"].numpy(), [[0, 0], [1, 2], [2, 4]])
    assert batch["n"].dtype == lazyscope.int64 and batch["w"].dtype == lazyscope.float64
    assert batch["name"] == ["s0", "s1", "s2"]
    pair = default_collate([(np.ones(2), 1), (np.zeros(2), 0)])
    assert isinstance(pair, tuple) and pair[0].shape == (2, 2)


def test_random_split():
    parts = random_split(TensorDataset(lazyscope.zeros(10, 1)), [7, 3], generator=0)
    assert [len(p) for p in parts] == [7, 3]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    with pytest.raises(ValueError, match="sum of input lengths"):
        random_split(TensorDataset(lazyscope.zeros(10, 1)), [5, 3])


def test_save_load_round_trips_nested_containers(tmp_path):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3)).astype(np.float32)
    obj = {"a": lazyscope.tensor(a, device="lazy:0"), "list": [lazyscope.tensor([1, 2]), 3, 2.5, float("inf")],
           "tuple": (None, True, "text"), 7: OrderedDict(w=lazyscope.tensor([1.0], dtype=lazyscope.float64))}
    path = tmp_path / "obj.lz"
    lazyscope.save(obj, str(path))
    back = lazyscope.load(str(path))
    np.testing.assert_array_equal(back["a"].numpy(), a)
    assert str(back["a"].device) == "lazy:0"
    assert back["list"][1:] == [3, 2.5, float("inf")] and back["list"][0].dtype == lazyscope.int64
    assert back["tuple"] == (None, True, "text") and isinstance(back[7], OrderedDict)
    assert back[7]["w"].dtype == lazyscope.float64
    on_cpu = lazyscope.load(str(path), map_location="cpu")
    assert str(on_cpu["a"].device) == "cpu"


def test_save_load_a_model_and_errors(tmp_path):
    src, dst = nn.Linear(3, 2), nn.Linear(3, 2)
    lazyscope.save(src.state_dict(), str(tmp_path / "m.lz"))
    dst.load_state_dict(lazyscope.load(str(tmp_path / "m.lz")))
    np.testing.assert_array_equal(dst.weight.numpy(), src.weight.numpy())
    with pytest.raises(TypeError, match="cannot save Linear at the object"):
        lazyscope.save(src, str(tmp_path / "x.lz"))
    (tmp_path / "junk").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a lazyscope save file"):
        lazyscope.load(str(tmp_path / "junk"))


def test_loading_onto_a_missing_device_names_it(tmp_path):
    lazyscope._C.set_device_count(2)
    try:
        lazyscope.save(lazyscope.zeros(2, device="lazy:1"), str(tmp_path / "t.lz"))
    finally:
        lazyscope._C.set_device_count(1)
    with pytest.raises(RuntimeError, match="saved from lazy:1, which does not exist"):
        lazyscope.load(str(tmp_path / "t.lz"))
    assert str(lazyscope.load(str(tmp_path / "t.lz"), device="lazy:0").device) == "lazy:0"
