"""lazyscope.distributed's process-group API in one process: the
DistributedSampler's shares (against the partition PyTorch documents,
computed here with NumPy), a one-rank Gloo group through a file store, the
errors of a process that was not launched, and mesh_reduce/master_print with
thread replicas. Several processes: tests/e2e/test_multiprocess.py."""
import numpy as np
import pytest

import lazyscope
from lazyscope import _C
from lazyscope.core import lazy_model as lm
import lazyscope.distributed as dist
from lazyscope.distributed import lazy_multiprocessing as lmp
from lazyscope.utils.data import DataLoader, TensorDataset


class Sized:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


def expected_share(n, world, rank, shuffle, seed, epoch, drop_last):
    order = np.random.default_rng(seed + epoch).permutation(n) if shuffle else np.arange(n)
    if drop_last:
        total = (n // world) * world
        order = order[:total]
    else:
        total = -(-n // world) * world
        order = np.resize(order, total)  # repeats from the start, as PyTorch pads
    return order[rank:total:world].tolist()


@pytest.mark.parametrize("n,world,drop_last", [(10, 3, False), (10, 3, True), (12, 4, False), (2, 3, False)])
def test_distributed_sampler_splits_the_dataset_as_pytorch_does(n, world, drop_last):
    shares = [list(dist.DistributedSampler(Sized(n), num_replicas=world, rank=r, shuffle=False, drop_last=drop_last))
              for r in range(world)]
    for r in range(world):
        assert shares[r] == expected_share(n, world, r, False, 0, 0, drop_last)
        assert len(dist.DistributedSampler(Sized(n), num_replicas=world, rank=r, drop_last=drop_last)) == len(shares[r])
    covered = sorted(i for share in shares for i in share)
    if drop_last:
        assert len(set(covered)) == len(covered) == (n // world) * world
    else:
        assert set(covered) == set(range(n))


def test_distributed_sampler_shuffles_the_same_on_every_rank_and_per_epoch():
    samplers = [dist.DistributedSampler(Sized(20), num_replicas=2, rank=r, seed=5) for r in range(2)]
    first = [list(s) for s in samplers]
    assert first[0] == expected_share(20, 2, 0, True, 5, 0, False)
    assert sorted(first[0] + first[1]) == list(range(20))
    for s in samplers:
        s.set_epoch(1)
    second = [list(s) for s in samplers]
    assert second[1] == expected_share(20, 2, 1, True, 5, 1, False)
    assert second != first


def test_distributed_sampler_feeds_a_data_loader_and_checks_its_rank():
    data = TensorDataset(lazyscope.from_numpy(np.arange(10, dtype=np.float32)))
    loader = DataLoader(data, batch_size=2, sampler=dist.DistributedSampler(data, num_replicas=2, rank=1,
                                                                          shuffle=False))
    assert [b[0].numpy().tolist() for b in loader] == [[1.0, 3.0], [5.0, 7.0], [9.0]]
    with pytest.raises(ValueError, match="rank 2 is not in 0 .. 1"):
        dist.DistributedSampler(data, num_replicas=2, rank=2)


def test_outside_a_launched_job_the_errors_say_what_to_do(monkeypatch):
    for name in ("LAZYSCOPE_RANK", "RANK", "LAZYSCOPE_WORLD_SIZE", "WORLD_SIZE", "LAZYSCOPE_RDZV_ID"):
        monkeypatch.delenv(name, raising=False)
    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match="lazyscope run --nproc-per-node N"):
        dist.init_process_group()
    with pytest.raises(RuntimeError, match="not initialized"):
        dist.get_rank()
    with pytest.raises(ValueError, match="backend 'nccl' is not available"):
        dist.init_process_group(backend="nccl", rank=0, world_size=1)
    with pytest.raises(ValueError, match="only file:///DIR"):
        dist.init_process_group(init_method="tcp://127.0.0.1:1234", rank=0, world_size=1)


def test_a_one_rank_group_through_a_file_store(tmp_path):
    dist.init_process_group(init_method=f"file://{tmp_path}", rank=0, world_size=1, timeout=10)
    try:
        assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
        assert lm.get_ordinal() == 0 and lm.xrt_world_size() == 1
        with pytest.raises(RuntimeError, match="already initialized"):
            dist.init_process_group(init_method=f"file://{tmp_path}", rank=0, world_size=1)
        values = np.array([1.5, -2.0, 3.25], dtype=np.float32)
        t = lazyscope.from_numpy(values).to("lazy:0")
        dist.all_reduce(t)
        lm.mark_step()
        np.testing.assert_array_equal(t.cpu().numpy(), values)
        eager = lazyscope.from_numpy(values)
        dist.all_reduce(eager, op=dist.ReduceOp.MAX)
        np.testing.assert_array_equal(eager.numpy(), values)
        dist.barrier()
        assert lm.mesh_reduce("x", 4.0, sum) == 4.0
        assert _C.process_group_totals()["collectives"] >= 2
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized() and lm.xrt_world_size() == 1


def test_mesh_reduce_and_master_print_with_thread_replicas(capsys):
    before = _C.device_count()
    _C.set_device_count(3)
    try:
        def fn(index):
            total = lm.mesh_reduce("sum", index + 1, sum)
            biggest = lm.mesh_reduce("max", np.full(2, float(index)), lambda xs: np.max(np.stack(xs), axis=0))
            lm.master_print(f"replica {index} sees {total}")
            return total, biggest.tolist()

        results = lmp.spawn(fn, nprocs=3)
    finally:
        _C.set_device_count(before)
    assert results == [(6, [2.0, 2.0])] * 3
    assert capsys.readouterr().out == "replica 0 sees 6\n"

