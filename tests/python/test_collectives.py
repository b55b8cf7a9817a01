"""all_reduce as an op of the step's graph: each replica thread runs its own
graph and the kernel meets the others in an in-process rendezvous. NumPy is
the oracle; counters show that no host sync is involved."""
import threading

import numpy as np
import pytest

import lazyscope
from lazyscope import _C, nn, optim
from lazyscope.core import lazy_model as lm
from lazyscope.distributed import data_parallel as dp
from lazyscope.distributed import lazy_multiprocessing as lmp
from lazyscope.utils.data import DataLoader, TensorDataset

NUMPY_REDUCE = {"sum": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum,
                "and": np.logical_and, "or": np.logical_or}


@pytest.fixture(params=[2, 4], ids=["2-replicas", "4-replicas"])
def world(request):
    before = _C.device_count()
    _C.set_device_count(request.param)
    yield request.param
    _C.set_device_count(before)


@pytest.fixture
def short_timeout():
    before = _C.collective_timeout()
    _C.set_collective_timeout(1.0)
    yield 1.0
    _C.set_collective_timeout(before)


def replica_values(world, kind):
    """Per-replica inputs: floats with mixed signs (exact in float32 sums and
    products), or 0/1 patterns for the logical kinds."""
    rng = np.random.default_rng(7)
    if kind in ("and", "or"):
        return [rng.integers(0, 2, size=(3, 4)).astype(np.float32) for _ in range(world)]
    return [rng.integers(-4, 5, size=(3, 4)).astype(np.float32) for _ in range(world)]


@pytest.mark.parametrize("kind", list(NUMPY_REDUCE))
def test_each_reduce_kind_matches_numpy(world, kind):
    values = replica_values(world, kind)
    scale = 1.0 if kind in ("and", "or") else 0.25

    def fn(index):
        t = lazyscope.tensor(values[index], device=lm.lazy_device())
        out = lm.all_reduce(kind, t, scale=scale)
        before = dict(lm.counters())
        lm.mark_step()
        after = lm.counters()
        return out.numpy(), str(out.device), after.get("SyncCause.mark_step", 0) - before.get("SyncCause.mark_step", 0)

    expected = values[0]
    for v in values[1:]:
        expected = NUMPY_REDUCE[kind](expected, v)
    expected = expected if kind in ("and", "or") else expected * scale
    groups_before = _C.replica_group_count()
    results = lmp.spawn(fn)
    for i, (got, device, _) in enumerate(results):
        assert device == f"lazy:{i}"
        if kind in ("and", "or"):
            assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, expected)
    assert _C.replica_group_count() == groups_before  # spawn unregisters its group


def test_results_are_bitwise_identical_on_every_replica(world):
    """Reduced in replica order by one thread: the same bits everywhere, even
    where float addition's order matters."""
    rng = np.random.default_rng(3)
    values = [rng.standard_normal(1000).astype(np.float32) * 10.0 ** rng.integers(-3, 4) for _ in range(world)]

    def fn(index):
        out = lm.all_reduce(lm.REDUCE_SUM, lazyscope.tensor(values[index], device=lm.lazy_device()))
        lm.mark_step()
        return out.numpy()

    results = lmp.spawn(fn)
    in_order = values[0].copy()
    for v in values[1:]:
        in_order = in_order + v  # float32, replica order
    for got in results:
        np.testing.assert_array_equal(got.view(np.uint32), in_order.view(np.uint32))


def test_all_reduce_is_a_graph_op_that_syncs_nothing(world):
    def fn(index):
        device = lm.lazy_device()
        t = lazyscope.ones(4, device=device) * (index + 1)
        out = lm.all_reduce(lm.REDUCE_SUM, t)
        graph = _C._pending_graph_text(device) if hasattr(_C, "_pending_graph_text") else None
        return out, graph

    def run(index):
        before = _C.counters().get("ExecuteCount", 0)
        out, _ = fn(index)
        assert _C.counters().get("ExecuteCount", 0) == before  # tracing ran nothing
        lm.mark_step()
        return out.numpy()

    for got in lmp.spawn(run):
        np.testing.assert_array_equal(got, np.full(4, world * (world + 1) / 2, dtype=np.float32))


def test_bad_arguments_raise_clearly(world):
    def fn(index):
        t = lazyscope.tensor([1, 2], device=lm.lazy_device())
        with pytest.raises(RuntimeError, match="scale=0.500000 needs a floating point tensor, got int64"):
            lm.all_reduce(lm.REDUCE_SUM, t, scale=0.5)
        with pytest.raises(RuntimeError, match="scale=.* needs a floating point arithmetic reduction, not 'and'"):
            lm.all_reduce(lm.REDUCE_AND, t.float(), scale=0.5)
        with pytest.raises(RuntimeError, match="unknown reduce_type 'avg'"):
            _C.all_reduce(t, "avg", 1.0, 1)
        with pytest.raises(RuntimeError, match="expected a tensor on a replica's lazy device, got one on cpu"):
            _C.all_reduce(lazyscope.ones(2), "sum", 1.0, 1)
        return True
    assert all(lmp.spawn(fn))


def test_all_reduce_outside_a_replica_graph_names_the_problem():
    key = _C.register_replica_group([_C.device("lazy:0")])
    try:
        out = _C.all_reduce(lazyscope.ones(2, device="lazy:0"), "sum", 1.0, key)
        np.testing.assert_array_equal(out.numpy(), [1.0, 1.0])  # a group of one: itself
        unknown = _C.all_reduce(lazyscope.ones(2, device="lazy:0"), "sum", 1.0, -5)
        with pytest.raises(RuntimeError, match=r"replica group -5 is not registered"):
            unknown.numpy()
        with pytest.raises(RuntimeError, match=r"replica group \d+ \(lazy:0\) is still registered"):
            _C.register_replica_group([_C.device("lazy:0")])
    finally:
        _C.unregister_replica_group(key)
    with pytest.raises(RuntimeError, match="lazy:0 is listed twice"):
        _C.register_replica_group([_C.device("lazy:0"), _C.device("lazy:0")])


def test_backward_through_all_reduce_raises_clearly(world):
    def fn(index):
        w = lazyscope.ones(3, device=lm.lazy_device()).requires_grad_()
        s = lm.all_reduce(lm.REDUCE_SUM, w * 2).sum()
        with pytest.raises(RuntimeError, match="all_reduce has no gradient"):
            s.backward()
        return True
    assert all(lmp.spawn(fn))


def test_mismatched_contributions_name_both_replicas():
    before = _C.device_count()
    _C.set_device_count(2)
    try:
        def fn(index):
            t = lazyscope.ones(2 + index, device=lm.lazy_device())
            out = lm.all_reduce(lm.REDUCE_SUM, t)
            lm.mark_step()
            return out
        with pytest.raises(RuntimeError, match=r"the replicas disagree .*float32\[[23]\] and lazy:[01] float32\[[23]\]"):
            lmp.spawn(fn)
    finally:
        _C.set_device_count(before)


def test_a_replica_that_never_arrives_times_out_naming_it(short_timeout):
    """No runner to abort the group (a replica that died silently, or took
    another path): the others raise after the timeout instead of hanging."""
    before = _C.device_count()
    _C.set_device_count(3)
    group = lm._ReplicationGroup(["lazy:0", "lazy:1", "lazy:2"])
    errors = {}

    def run(i):
        lm._enter_replica(group, i)
        try:
            if i == 2:
                raise KeyError("replica 2 dies before its collective")
            out = lm.all_reduce(lm.REDUCE_SUM, lazyscope.ones(2, device=lm.lazy_device()))
            lm.mark_step()
            out.numpy()
        except Exception as exc:  # noqa: BLE001  (checked below)
            errors[i] = exc
        finally:
            lm._leave_replica()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert not any(t.is_alive() for t in threads), "a replica hung in the collective"
    finally:
        group.close()
        _C.set_device_count(before)
    assert isinstance(errors[2], KeyError)
    for i in (0, 1):
        message = str(errors[i])
        assert "all_reduce(sum)" in message and f"replica group {group.key} (lazy:0, lazy:1, lazy:2)" in message
        assert "replica 2 (lazy:2) never arrived within 1.0" in message and "LAZYSCOPE_COLLECTIVE_TIMEOUT_S" in message


def test_spawn_releases_the_others_at_once_when_a_replica_raises(world):
    """The runner aborts the group when a replica raises: the others leave the
    collective with the cause (not after the 60 s default timeout)."""
    seen = {}

    def fn(index):
        if index == 1:
            raise ValueError("bad batch")
        out = lm.all_reduce(lm.REDUCE_SUM, lazyscope.ones(2, device=lm.lazy_device()))
        try:
            lm.mark_step()
        except RuntimeError as exc:
            seen[index] = str(exc)
            raise
        return out

    with pytest.raises(RuntimeError, match=r"spawn: replica 1 failed: ValueError\('bad batch'\)"):
        lmp.spawn(fn)
    assert seen and all("was aborted: replica 1 failed: ValueError('bad batch')" in m for m in seen.values())


def _numpy_big_batch_sgd(w, b, x, y, lr, rounds, world, per):
    for r in range(rounds):
        xs, ys = x[world * per * r:world * per * (r + 1)], y[world * per * r:world * per * (r + 1)]
        err = xs @ w.T + b - ys
        w = w - lr * (2 * err.T @ xs / per) / world
        b = b - lr * (2 * err.sum(0) / per) / world
    return w, b


def test_data_parallel_loop_syncs_only_at_barriers_and_hits_the_cache(world):
    """Five data-parallel steps: the gradient all-reduce adds no host sync
    (every execution is a barrier's), after the first step every execution
    is a compile-cache hit, and the replicas match a NumPy big-batch SGD."""
    steps, per = 5, 4
    rng = np.random.default_rng(0)
    x = rng.standard_normal((steps * world * per, 4)).astype(np.float32)
    y = rng.standard_normal((steps * world * per, 1)).astype(np.float32)
    lazyscope.manual_seed(1)
    base = nn.Linear(4, 1)
    w0, b0 = base.weight.numpy().astype(np.float64), base.bias.numpy().astype(np.float64)
    devices = [f"lazy:{i}" for i in range(world)]
    model_parallel = dp.DataParallel(base, device_ids=devices)
    loader = DataLoader(TensorDataset(lazyscope.tensor(x), lazyscope.tensor(y)), batch_size=per)
    hits = {}

    def loop(model, device_loader, device, context):
        opt = context.getattr_or("opt", lambda: optim.SGD(model.parameters(), lr=0.1, momentum=0.0))
        for _, (data, target) in device_loader:
            opt.zero_grad()
            nn.functional.mse_loss(model(data), target).backward()
            lm.optimizer_step(opt)
        return True

    from runtime_util import capture_events
    counters_before = dict(lm.counters())
    with capture_events() as events:
        assert all(model_parallel(loop, loader))
    after = lm.counters()
    moved = {k: v - counters_before.get(k, 0) for k, v in after.items() if k.startswith("SyncCause.")}
    assert {k: v for k, v in moved.items() if v and k != "SyncCause.mark_step"} == {}
    executions = [(e.get("replica", 0), e["execute"]) for e in events.all() if "execute" in e]
    assert executions and all(x.get("cause") == "SYNC_CAUSE_MARK_STEP" for _, x in executions)
    for replica, execution in executions:
        hits.setdefault(replica, []).append(bool(execution["cache_hit"]))
    # Per replica: one execution per step; the first may compile, the rest hit.
    assert sorted(hits) == list(range(world)) and all(len(h) == steps for h in hits.values()), hits
    assert all(all(h[1:]) for h in hits.values()), hits
    w, b = _numpy_big_batch_sgd(w0, b0, x, y, 0.1, steps, world, per)
    for m in model_parallel.models:
        np.testing.assert_allclose(m.weight.numpy(), w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(m.bias.numpy(), b, rtol=1e-5, atol=1e-6)


def test_a_second_epoch_traces_the_same_graph(world):
    """The group key is a function of the devices, so DataParallel's next
    epoch (a new group over the same devices) hits the compile cache."""
    devices = [f"lazy:{i}" for i in range(world)]
    model_parallel = dp.DataParallel(nn.Linear(3, 2), device_ids=devices)
    data = np.arange(world * 2 * 3, dtype=np.float32).reshape(world * 2, 3)
    loader = DataLoader(TensorDataset(lazyscope.tensor(data)), batch_size=2)

    def loop(model, device_loader, device, context):
        opt = context.getattr_or("opt", lambda: optim.SGD(model.parameters(), lr=0.01))
        for _, (x,) in device_loader:
            opt.zero_grad()
            model(x).sum().backward()
            lm.optimizer_step(opt)
        return True

    model_parallel(loop, loader)
    before = lm.counters().get("UncachedCompile", 0)
    model_parallel(loop, loader)
    assert lm.counters().get("UncachedCompile", 0) == before
