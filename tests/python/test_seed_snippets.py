"""Every code snippet of the seed documents (/work/shared/seeds), run with only
its import lines changed. Each snippet is kept in the repository (in this file,
or under data/seed_snippets/ where it is cut out of a seed's prose), so the
tests run on any clone; where the seeds are present, each snippet is also
checked line by line against its seed file (every non-import line must appear
there verbatim). Each is executed with the names the seeds leave undefined (MNIST, train_loader,
lr, momentum, num_epochs) defined here: a small MLP on a few batches of
synthetic MNIST."""
import os
import pathlib
import textwrap

import numpy as np
import pytest

import lazyscope
from lazyscope import _C, nn, optim
from lazyscope.utils.data import DataLoader
from lazyscope.datasets import SyntheticMNIST

SEEDS = pathlib.Path(os.environ.get("LAZYSCOPE_SEEDS", "/work/shared/seeds"))
SNIPPETS = pathlib.Path(__file__).parent / "data" / "seed_snippets"

TORCH_IMPORTS = """\
import lazyscope as torch
from lazyscope import nn, optim
import lazyscope.compat.torch_xla as torch_xla
"""


def seed_text(name):
    """The seed document's text, or None where the seeds are absent (a clone):
    the snippets then run without the verbatim check."""
    path = next(SEEDS.glob(f"{name}_*.txt"), None) if SEEDS.is_dir() else None
    return path.read_text() if path is not None else None


def seeds_present():
    return seed_text("000") is not None


def check_verbatim(snippet, seed):
    # Indentation differs where the seed nests a snippet in a list item, and
    # one snippet is inline in a sentence: compare each line's text.
    for line in snippet.splitlines():
        if not line.strip() or line.lstrip().startswith(("import ", "from ")):
            continue
        assert line.strip() in seed, f"not in the seed verbatim: {line.strip()!r}"


class MNIST(nn.Module):
    """The seeds' undefined MNIST model: a small MLP built on this thread's device."""

    def __init__(self):
        super().__init__()
        import lazyscope.compat.torch_xla.core.xla_model as xm
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10), nn.LogSoftmax(dim=1))
        self.to(xm.xla_device())

    def forward(self, x):
        return self.net(x)


def run(seed, snippet, verbatim=True, **names):
    snippet = textwrap.dedent(snippet)
    seed_document = seed_text(seed)
    if verbatim and seed_document is not None:
        check_verbatim(snippet, seed_document)
    namespace = dict(__name__="__main__", MNIST=MNIST, lr=0.05, momentum=0.5, num_epochs=1,
                     train_loader=DataLoader(SyntheticMNIST(64, seed=1), batch_size=16, shuffle=True, generator=0))
    namespace.update(names)
    exec(compile(TORCH_IMPORTS + snippet, f"<seed {seed}>", "exec"), namespace)
    return namespace


@pytest.fixture
def two_devices():
    before = _C.device_count()
    _C.set_device_count(2)
    yield
    _C.set_device_count(before)


def test_000_creating_and_printing_a_tensor(capsys):
    ns = run("000", """
        import torch_xla.core.xla_model as xm
        t = torch.randn(2, 2, device=xm.xla_device())
        print(t.device)
        print(t)
        """.replace("import torch_xla.core.xla_model as xm", "import lazyscope.compat.torch_xla.core.xla_model as xm"))
    out = capsys.readouterr().out
    assert out.startswith("lazy:0\ntensor([[") and "device='lazy:0'" in out
    assert ns["t"].shape == (2, 2)


def test_000_add_mm_and_linear(capsys):
    ns = run("000", """
        import lazyscope.compat.torch_xla.core.xla_model as xm
        t0 = torch.randn(2, 2, device=xm.xla_device())
        t1 = torch.randn(2, 2, device=xm.xla_device())
        print(t0 + t1)
        print(t0.mm(t1))
        l_in = torch.randn(10, device=xm.xla_device())
        linear = torch.nn.Linear(10, 20).to(xm.xla_device())
        l_out = linear(l_in)
        print(l_out)
        """)
    t0, t1 = ns["t0"].numpy(), ns["t1"].numpy()
    np.testing.assert_allclose(ns["l_out"].numpy(), ns["linear"].weight.numpy() @ ns["l_in"].numpy()
                               + ns["linear"].bias.numpy(), rtol=1e-5, atol=1e-6)
    assert np.allclose(t0 @ t1, (ns["t0"].mm(ns["t1"])).numpy(), atol=1e-6)
    assert capsys.readouterr().out.count("tensor(") == 3


def test_000_a_cpu_module_fed_a_lazy_tensor_fails_naming_both_devices():
    with pytest.raises(lazyscope.DeviceMismatchError, match="lazy:0.*cpu|cpu.*lazy:0"):
        run("000", """
            import lazyscope.compat.torch_xla.core.xla_model as xm
            l_in = torch.randn(10, device=xm.xla_device())
            linear = torch.nn.Linear(10, 20)
            l_out = linear(l_in)
            print(l_out)
            """)


def test_000_single_device_training_loop():
    ns = run("000", """
        import lazyscope.compat.torch_xla.core.xla_model as xm

        device = xm.xla_device()
        model = MNIST().train().to(device)
        loss_fn = nn.NLLLoss()
        optimizer = optim.SGD(model.parameters(), lr=lr, momentum=momentum)

        for data, target in train_loader:
          optimizer.zero_grad()
          data = data.to(device)
          target = target.to(device)
          output = model(data)
          loss = loss_fn(output, target)
          loss.backward()

          xm.optimizer_step(optimizer, barrier=True)
        """)
    assert np.isfinite(ns["loss"].item())


MP_SNIPPET = """
    import lazyscope.compat.torch_xla.core.xla_model as xm
    import lazyscope.compat.torch_xla.distributed.parallel_loader as pl
    import lazyscope.compat.torch_xla.distributed.xla_multiprocessing as xmp

    def _mp_fn(index):
      device = xm.xla_device()
      para_loader = pl.ParallelLoader(train_loader, [device])

      model = MNIST().train().to(device)
      loss_fn = nn.NLLLoss()
      optimizer = optim.SGD(model.parameters(), lr=lr, momentum=momentum)

      for data, target in para_loader.per_device_loader(device):
        optimizer.zero_grad()
        output = model(data)
        loss = loss_fn(output, target)
        loss.backward()
        xm.optimizer_step(optimizer)

    if __name__ == '__main__':
      xmp.spawn(_mp_fn, args=())
    """


def test_000_multiprocessing_snippet_on_two_devices(two_devices):
    run("000", MP_SNIPPET)


def test_004_multiprocessing_snippet(two_devices):
    run("004", """
        import lazyscope.compat.torch_xla.core.xla_model as xm
        import lazyscope.compat.torch_xla.distributed.parallel_loader as pl
        import lazyscope.compat.torch_xla.distributed.xla_multiprocessing as xmp

        def _mp_fn(index):
          device = xm.xla_device()
          para_loader = pl.ParallelLoader(train_loader, [device])

          model = MNIST()
          loss_fn = nn.NLLLoss()
          optimizer = optim.SGD(model.parameters(), lr=lr, momentum=momentum)

          model.train()
          for data, target in para_loader.per_device_loader(device):
            optimizer.zero_grad()
            output = model(data)
            loss = loss_fn(output, target)
            loss.backward()
            xm.optimizer_step(optimizer)

        if __name__ == '__main__':
          xmp.spawn(_mp_fn, args=())
        """)


DP_SNIPPET = """
    import lazyscope.compat.torch_xla.core.xla_model as xm
    import lazyscope.compat.torch_xla.distributed.data_parallel as dp

    devices = xm.get_xla_supported_devices()
    model_parallel = dp.DataParallel(MNIST, device_ids=devices)

    def train_loop_fn(model, loader, device, context):
      loss_fn = nn.NLLLoss()
      optimizer = optim.SGD(model.parameters(), lr=lr, momentum=momentum)

      model.train()
      for _, (data, target) in loader:
        optimizer.zero_grad()
        output = model(data)
        loss = loss_fn(output, target)
        loss.backward()
        xm.optimizer_step(optimizer)

    for epoch in range(1, num_epochs + 1):
      model_parallel(train_loop_fn, train_loader)
    """


@pytest.mark.parametrize("seed", ["000", "004"])
def test_data_parallel_snippet_keeps_replicas_identical(seed, two_devices):
    ns = run(seed, DP_SNIPPET)
    a, b = ns["model_parallel"].models
    for (name, pa), pb in zip(a.named_parameters(), b.parameters()):
        np.testing.assert_allclose(pa.numpy(), pb.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    assert str(next(b.parameters()).device) == "lazy:1"


def test_001_data_parallel_snippet_with_the_early_package_names(two_devices):
    run("001", DP_SNIPPET.replace("lazyscope.compat.torch_xla.core.xla_model", "lazyscope.compat.torch_xla_py.xla_model")
        .replace("lazyscope.compat.torch_xla.distributed.data_parallel", "lazyscope.compat.torch_xla_py.data_parallel"))


def test_data_parallel_with_no_devices_runs_on_cpu():
    # The seeds: "Passing [] as device_ids causes the model to run using the PyTorch native CPU support."
    # (the prose's variant of the snippet, so not checked verbatim)
    ns = run("004", DP_SNIPPET.replace("device_ids=devices", "device_ids=[]"), verbatim=False)
    assert str(next(ns["model_parallel"].models[0].parameters()).device) == "cpu"


@pytest.mark.parametrize("seed, package", [("001", "torch_xla_py"), ("004", "torch_xla")])
def test_randn_4x2_on_the_device(seed, package, capsys):
    run(seed, f"""
        import lazyscope.compat.{package}.xla_model as xm
        x = torch.randn(4, 2, device=xm.xla_device())
        print(x.device)
        print(x)
        """.replace("compat.torch_xla.xla_model", "compat.torch_xla.core.xla_model"))
    assert capsys.readouterr().out.startswith("lazy:0\n")


def test_001_metrics_report_and_004_native_loop(capsys):
    run("004", """
        import lazyscope.compat.torch_xla.core.xla_model as xm

        device = xm.xla_device()
        model = MNIST()
        loss_fn = nn.NLLLoss()
        optimizer = optim.SGD(model.parameters(), lr=lr, momentum=momentum)

        model.train()
        for data, target in train_loader:
          optimizer.zero_grad()
          data = data.to(device)
          target = target.to(device)
          output = model(data)
          loss = loss_fn(output, target)
          loss.backward()
          xm.optimizer_step(optimizer, barrier=True)
        """)
    run("001", "print(torch_xla._XLAC._xla_metrics_report())\n")
    assert "CompileTime" in capsys.readouterr().out


def test_001_clip_grad_norm_rewrite():
    # The seed elides the first branch ("..."); this test supplies the if and
    # the names the fragment uses, then runs the fragment from "else:" on.
    fragment = textwrap.dedent((SNIPPETS / "001_clip_grad_norm_fragment.txt").read_text())
    params = [nn.Parameter(torch_randn((3,))) for _ in range(2)]
    for p in params:
        p.grad = torch_randn((3,)) * 10
    grads = [p.grad.numpy() for p in params]
    ns = dict(torch=lazyscope, parameters=params, norm_type=2.0, max_norm=1.0)
    exec("if False:\n  pass\n" + fragment, ns)
    total = np.sqrt(sum((g ** 2).sum() for g in grads))
    np.testing.assert_allclose(params[0].grad.numpy(), grads[0] * min(1, 1.0 / (total + 1e-6)), rtol=1e-5)


def torch_randn(shape):
    return lazyscope.randn(*shape, device="lazy:0")


def test_000_saving_and_loading(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ns = run("000", """
        import lazyscope.compat.torch_xla.core.xla_model as xm

        device = xm.xla_device()

        t0 = torch.randn(2, 2, device=device)
        t1 = torch.randn(2, 2, device=device)

        tensors = (t0.cpu(), t1.cpu())

        torch.save(tensors, 'tensors.pt')

        tensors = torch.load('tensors.pt')

        t0 = tensors[0].to(device)
        t1 = tensors[1].to(device)
        """)
    assert str(ns["t0"].device) == "lazy:0" and isinstance(ns["tensors"], tuple)
    assert str(ns["tensors"][0].device) == "cpu"


def test_004_views_and_copies(tmp_path):
    ns = run("004", """
        a = torch.rand(3, 3)
        b = a[0]
        c = a[0:2]
        """)
    path = str(tmp_path / "views.lz")
    lazyscope.save((ns["a"], ns["b"], ns["c"]), path)
    a, b, c = lazyscope.load(path)
    np.testing.assert_array_equal(b.numpy(), a.numpy()[0])
    np.testing.assert_array_equal(c.numpy(), a.numpy()[0:2])
    import copy
    d = copy.copy(a)
    assert d is not a
    np.testing.assert_array_equal(d.numpy(), a.numpy())


def test_stored_fragments_are_the_seeds_text():
    # Only where the seeds are present; the fragment itself runs either way.
    if not seeds_present():
        pytest.skip(f"no seeds under {SEEDS} to compare the stored fragment with")
    stored = (SNIPPETS / "001_clip_grad_norm_fragment.txt").read_text()
    assert seed_text("001").split("    ...\n", 1)[1].split("\n  3.", 1)[0] == stored


def test_snippets_run_without_the_seeds():
    # A clone has no /work/shared/seeds: the snippets must still run (and so be able to fail).
    global SEEDS
    saved, SEEDS = SEEDS, pathlib.Path("/nonexistent/seeds")
    try:
        ns = run("000", "t = torch.ones(2, 3) * 2\n")
        assert ns["t"].tolist() == [[2.0] * 3] * 2
        test_001_clip_grad_norm_rewrite()
    finally:
        SEEDS = saved
