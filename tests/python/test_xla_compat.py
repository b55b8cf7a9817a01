"""PyTorch/XLA's surface (issue 10 §2, issue 14 §1): a script of the shape of
PyTorch/XLA's test/test_train_mp_mnist.py runs with 1, 2 and 4 replicas and
ends with identical replicas; mesh_reduce, RateTracker, master_print,
torch_xla.runtime, and a clear refusal for every xla_model function
LazyScope does not provide."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import lazyscope
from lazyscope import _C
import lazyscope.compat.torch_xla as torch_xla
import lazyscope.compat.torch_xla.core.xla_model as xm
import lazyscope.compat.torch_xla.distributed.xla_multiprocessing as xmp

SCRIPT = pathlib.Path(__file__).parent / "data" / "train_mp_mnist.py"


@pytest.mark.parametrize("replicas", [1, 2, 4])
def test_mp_mnist_script_trains_with_identical_replicas(replicas, tmp_path, build_dir):
    env = dict(os.environ, LAZYSCOPE_DEVICE_COUNT=str(replicas),
               PYTHONPATH=str(build_dir / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, str(SCRIPT), "--num_cores", str(replicas), "--out", str(tmp_path),
                           "--train_samples", str(64 * replicas), "--metrics_debug"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Max Accuracy:" in done.stdout and done.stdout.count("Max Accuracy:") == 1  # master_print: once
    assert "CompileTime" in done.stdout  # met.metrics_report()
    # add_step_closure ran the logging closure on every replica after its step.
    for ordinal in range(replicas):
        assert f"[lazy:{ordinal}] epoch 2 step 2 loss=" in done.stdout
    states = [np.load(tmp_path / f"replica_{i}.npz") for i in range(replicas)]
    first = states[0]
    assert "conv1.weight" in first.files and "bn1.running_mean" in first.files
    for other in states[1:]:
        for name in first.files:
            np.testing.assert_array_equal(other[name], first[name], err_msg=name)
    # Training moved the weights away from a fresh model's (which has zero running means).
    assert np.abs(first["bn1.running_mean"]).sum() > 0


@pytest.fixture
def devices(request):
    before = _C.device_count()
    _C.set_device_count(request.param)
    yield request.param
    _C.set_device_count(before)


@pytest.mark.parametrize("devices", [3], indirect=True)
def test_mesh_reduce_sees_every_replicas_data_in_ordinal_order(devices):
    def fn(index):
        t = lazyscope.tensor([float(index), 10.0 * index], device=xm.xla_device())
        seen = xm.mesh_reduce("values", {"n": index, "t": t}, lambda items: items)
        mean = xm.mesh_reduce("mean", float(index), np.mean)
        again = xm.mesh_reduce("values", index * 2, list)  # a tag can be used again
        return seen, mean, again

    results = xmp.spawn(fn, args=())
    for seen, mean, again in results:
        assert [d["n"] for d in seen] == [0, 1, 2]
        assert [d["t"].tolist() for d in seen] == [[0.0, 0.0], [1.0, 10.0], [2.0, 20.0]]
        assert str(seen[1]["t"].device) == "cpu"
        assert mean == 1.0 and again == [0, 2, 4]


@pytest.mark.parametrize("devices", [4], indirect=True)
def test_mesh_reduce_with_one_tag_used_many_times_in_a_row(devices):
    def fn(index):
        import time
        out = []
        for i in range(30):
            if index == 3 and i % 7 == 0:
                time.sleep(0.002)  # a slow replica must not lose or mix up a later use of the tag
            out.append(xm.mesh_reduce("same", (index, i), list))
        return out

    for results in xmp.spawn(fn, args=()):
        assert results == [[(o, i) for o in range(4)] for i in range(30)]


@pytest.mark.parametrize("devices", [3], indirect=True)
def test_all_gather_and_reduce_scatter_match_numpy(devices):
    values = [np.arange(6, dtype=np.float32).reshape(2, 3) * (i + 1) - i for i in range(3)]

    def fn(index):
        device = xm.xla_device()
        t = lazyscope.tensor(values[index], device=device)
        gathered = xm.all_gather(t, dim=1)
        scattered = xm.reduce_scatter(xm.REDUCE_SUM, lazyscope.cat([t, t, t], 0), 0.5, 0, 3)
        xm.mark_step()
        return gathered.numpy(), scattered.numpy()

    total = 0.5 * np.concatenate([sum(values)] * 3, 0)
    for index, (gathered, scattered) in enumerate(xmp.spawn(fn, args=())):
        np.testing.assert_array_equal(gathered, np.concatenate(values, 1))
        np.testing.assert_allclose(scattered, total[2 * index:2 * index + 2], rtol=1e-6)


def test_mesh_reduce_outside_a_replication_reduces_one_item():
    assert xm.mesh_reduce("x", 3.0, lambda items: items) == [3.0]


@pytest.mark.parametrize("devices", [2], indirect=True)
def test_master_print_prints_once_and_runtime_names_the_replica(devices, capsys):
    def fn(index):
        xm.master_print("hello from", index)
        return (torch_xla.runtime.world_size(), torch_xla.runtime.global_ordinal(),
                torch_xla.runtime.local_ordinal())

    assert xmp.spawn(fn, args=()) == [(2, 0, 0), (2, 1, 1)]
    assert capsys.readouterr().out == "hello from 0\n"
    assert torch_xla.runtime.using_pjrt() and torch_xla.runtime.device_type() == "CPU"
    assert torch_xla.runtime.world_size() == 1 and torch_xla.runtime.global_ordinal() == 0


def test_rate_tracker_counts_samples_per_second():
    clock = iter([102.0, 104.0, 105.0])
    tracker = xm.RateTracker(smooth_factor=0.5)
    tracker._time = lambda: next(clock)
    tracker._start_time = tracker._partial_time = 100.0
    tracker.add(20)
    assert tracker.rate() == 10.0  # 20 samples in 2 s
    tracker.add(40)
    assert tracker.rate() == 0.5 * 20.0 + 0.5 * 10.0  # smoothed with the previous rate
    assert tracker.global_rate() == 60 / 5.0


@pytest.mark.parametrize("devices", [2], indirect=True)
def test_broadcast_master_param_makes_replicas_start_equal(devices):
    def fn(index):
        lazyscope.manual_seed(index)  # different initial weights per replica
        model = lazyscope.nn.Linear(3, 2).to(xm.xla_device())
        xm.broadcast_master_param(model)
        return model.weight.numpy()

    a, b = xmp.spawn(fn, args=())
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", sorted(n for n, (status, _) in xm.STATUS.items() if status == "refused"))
def test_refused_functions_name_themselves_and_the_alternative(name):
    with pytest.raises(NotImplementedError, match=rf"torch_xla.core.xla_model.{name}\(\) is not supported by "
                                                  rf"LazyScope; use \S"):
        getattr(xm, name)(lazyscope.ones(2))


def test_every_listed_function_exists():
    for name in xm.STATUS:
        assert callable(getattr(xm, name)), name


def test_utils_helpers_behave_as_pytorch_xlas():
    import lazyscope.compat.torch_xla.utils.utils as xu
    assert xu.shape([[1, 2], [3, 4], [5, 6]]) == [3, 2] and xu.flatten_nested_tuple((1, (2, [3]))) == (1, 2, 3)
    data = {"a": [lazyscope.ones(2), 3], "b": (lazyscope.zeros(1),)}
    seen = []
    xu.for_each_instance(data, lambda v: isinstance(v, lazyscope.Tensor), seen.append)
    assert len(seen) == 2
    rewritten = xu.for_each_instance_rewrite(data, lambda v: isinstance(v, lazyscope.Tensor), lambda t: t.sum().item())
    assert rewritten == {"a": [2.0, 3], "b": (0.0,)}
    batches = list(xu.FnDataGenerator(lambda d: d.sum(1), 4, lazyscope.ones, dims=[3], count=2))
    assert len(batches) == 2 and batches[0][1].tolist() == [3.0] * 4
    assert list(xu.SampleGenerator(data=7, sample_count=3)) == [7, 7, 7]
    lazy = xu.LazyProperty(lambda: [1])
    assert lazy.value is lazy.value
    assert xu.getenv_as("LAZYSCOPE_SURELY_UNSET", int, 5) == 5 and xu.as_list(3) == [3]


def test_executed_fallback_ops_lists_the_ops_that_fell_back():
    import lazyscope.compat.torch_xla.debug.metrics as met
    met.clear_counters()
    x = lazyscope.tensor([0.0, 1.0, 0.0, 2.0], device="lazy:0")
    lazyscope.nonzero(x).tolist()  # data-dependent: a fallback on a lazy device
    assert "nonzero" in met.executed_fallback_ops()


def test_every_compat_module_lists_its_functions_and_each_exists():
    import lazyscope.compat.torch_xla.debug.metrics as met
    import lazyscope.compat.torch_xla.distributed.parallel_loader as pl
    import lazyscope.compat.torch_xla.utils.utils as xu
    for module in (xm, pl, xmp, xu, met):
        assert module.STATUS
        for name, (status, note) in module.STATUS.items():
            assert status in ("supported", "differs", "refused"), (module.__name__, name)
            assert status == "supported" or note, (module.__name__, name)  # a difference or refusal says what
            assert getattr(module, name, None) is not None, (module.__name__, name)
