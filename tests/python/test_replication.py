"""Device helpers (lazy_model), all_reduce across replica threads, step
closures, ParallelLoader, DataParallel and spawn."""
import threading

import numpy as np
import pytest

import lazyscope
from lazyscope import _C, nn, optim
from lazyscope.core import lazy_model as lm
from lazyscope.distributed import data_parallel as dp
from lazyscope.distributed import lazy_multiprocessing as lmp
from lazyscope.distributed.parallel_loader import ParallelLoader
from lazyscope.utils.data import DataLoader, TensorDataset
from lazyscope.utils.utils import SampleGenerator


@pytest.fixture
def three_devices():
    before = _C.device_count()
    _C.set_device_count(3)
    yield ["lazy:0", "lazy:1", "lazy:2"]
    _C.set_device_count(before)


def test_single_process_defaults():
    assert lm.xrt_world_size() == 1 and lm.get_ordinal() == 0 and lm.is_master_ordinal()
    assert lm.xrt_world_size(defval=5) == 5
    assert str(lm.lazy_device()) == "lazy:0"
    with pytest.raises(ValueError, match="there are 1 lazy devices"):
        lm.lazy_device(4)
    t = lazyscope.ones(2)
    np.testing.assert_array_equal(lm.all_reduce(lm.REDUCE_SUM, t, scale=0.5).numpy(), [0.5, 0.5])
    with pytest.raises(ValueError, match="unknown reduce_type 'avg'"):
        lm.all_reduce("avg", t)


def test_spawn_gives_each_replica_its_device_and_all_reduce_sums(three_devices):
    def fn(index, base):
        device = lm.lazy_device()
        t = lazyscope.tensor([float(index + base)], device=device)
        items = [t, t * 10]
        lm.all_reduce(lm.REDUCE_SUM, items)
        mx = lm.all_reduce(lm.REDUCE_MAX, t)
        return str(device), lm.get_ordinal(), lm.xrt_world_size(), items[0].item(), items[1].item(), mx.item(), \
            str(items[0].device)
    out = lmp.spawn(fn, args=(1,))
    for i, (device, ordinal, world, s, s10, mx, where) in enumerate(out):
        assert (device, ordinal, world, where) == (f"lazy:{i}", i, 3, f"lazy:{i}")
        assert (s, s10, mx) == (6.0, 60.0, 3.0)
    with pytest.raises(ValueError, match="nprocs must be 1 or the number of lazy devices"):
        lmp.spawn(fn, args=(0,), nprocs=2)


def test_a_failing_replica_does_not_hang_the_others(three_devices):
    def fn(index):
        if index == 1:
            raise KeyError("boom")
        lm.all_reduce(lm.REDUCE_SUM, lazyscope.ones(1, device=lm.lazy_device()))
    with pytest.raises(RuntimeError, match="replica 1 failed: KeyError"):
        lmp.spawn(fn)


def test_step_closures_run_after_the_barrier():
    seen = []
    x = lazyscope.ones(3, device="lazy:0") * 2
    lm.add_step_closure(lambda t, tag: seen.append((tag, t.numpy().tolist())), args=(x, "step"))
    assert seen == []
    before = lm.counters().get("ExecuteCount", 0)
    lm.mark_step()
    assert seen == [("step", [2.0, 2.0, 2.0])]
    # The value was already computed by the barrier: reading it ran nothing more.
    assert lm.counters()["ExecuteCount"] == before + 1


def test_parallel_loader_deals_whole_rounds_and_marks_steps(three_devices):
    data = TensorDataset(lazyscope.tensor(np.arange(14, dtype=np.float32).reshape(14, 1)))
    loader = DataLoader(data, batch_size=2)  # 7 batches -> 2 whole rounds of 3
    para = ParallelLoader(loader, three_devices)
    got = {}
    for d in three_devices:
        steps_before = lm.counters().get("MarkStep", 0)
        got[d] = [(str(b[0].device), b[0].numpy().ravel().tolist()) for b in para.per_device_loader(d)]
        assert lm.counters()["MarkStep"] > steps_before
    assert got["lazy:0"] == [("lazy:0", [0.0, 1.0]), ("lazy:0", [6.0, 7.0])]
    assert got["lazy:2"] == [("lazy:2", [4.0, 5.0]), ("lazy:2", [10.0, 11.0])]
    with pytest.raises(ValueError, match="lazy:7 is not one of this loader's devices"):
        para.per_device_loader("lazy:7")


def test_parallel_loader_fixed_batch_size_stops_at_the_short_batch():
    data = TensorDataset(lazyscope.zeros(10, 1))
    para = ParallelLoader(DataLoader(data, batch_size=4), ["lazy:0"], fixed_batch_size=True)
    assert [b[0].shape[0] for b in para.per_device_loader("lazy:0")] == [4, 4]


def test_data_parallel_averages_gradients_like_one_big_batch(three_devices):
    """Three replicas on a third of the batch each, with averaged gradients, move
    like a single model on the whole batch (the per-replica losses are means)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((36, 4)).astype(np.float32)
    y = rng.standard_normal((36, 1)).astype(np.float32)
    lazyscope.manual_seed(1)
    base = nn.Linear(4, 1)
    w0, b0 = base.weight.numpy().copy(), base.bias.numpy().copy()
    model_parallel = dp.DataParallel(base, device_ids=three_devices)
    loader = DataLoader(TensorDataset(lazyscope.tensor(x), lazyscope.tensor(y)), batch_size=4)

    def loop(model, device_loader, device, context):
        opt = context.getattr_or("opt", lambda: optim.SGD(model.parameters(), lr=0.1))
        steps = 0
        for _, (data, target) in device_loader:
            opt.zero_grad()
            nn.functional.mse_loss(model(data), target).backward()
            lm.optimizer_step(opt)
            steps += 1
        return steps
    assert model_parallel(loop, loader) == [3, 3, 3]
    # NumPy reference: each round of 3 batches is one step on 12 samples.
    w, b = w0.astype(np.float64), b0.astype(np.float64)
    for r in range(3):
        xs, ys = x[12 * r:12 * r + 12], y[12 * r:12 * r + 12]
        err = xs @ w.T + b - ys
        w = w - 0.1 * (2 * err.T @ xs / 4) / 3
        b = b - 0.1 * (2 * err.sum(0) / 4) / 3
    for m in model_parallel.models:
        np.testing.assert_allclose(m.weight.numpy(), w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(m.bias.numpy(), b, rtol=1e-5, atol=1e-6)


def test_sample_generator():
    gen = SampleGenerator(data=(1, 2), sample_count=3)
    assert list(gen) == [(1, 2)] * 3 and len(gen) == 3


def test_lm_save_writes_through_the_host(tmp_path):
    lm.save({"w": lazyscope.ones(2, device="lazy:0")}, str(tmp_path / "s.lz"))
    back = lazyscope.load(str(tmp_path / "s.lz"))
    assert str(back["w"].device) == "cpu"


def test_module_scope_is_per_thread():
    paths = {}

    class Probe(nn.Module):
        def forward(self, x):
            from lazyscope.nn.module import _scope_stack
            paths[threading.current_thread().name] = [p for _, p in _scope_stack()]
            return x
    outer = nn.Sequential(Probe())
    t = threading.Thread(target=lambda: outer(1), name="other")
    t.start()
    t.join()
    assert paths["other"] == ["Sequential", "Sequential.0"]
