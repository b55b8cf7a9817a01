"""torch.utils.tensorboard.SummaryWriter on LazyScope: scalars from a lazy
training loop reach the history as scalar events with the values NumPy
computes, without a sync of their own; add_scalars, add_histogram and
add_hparams as named scalars; what is not a scalar warns once and stops
nothing; a closed writer refuses."""
import numpy as np
import pytest

import lazyscope
from lazyscope.core import lazy_model as lm
from lazyscope.utils.tensorboard import SummaryWriter
from runtime_util import capture_events


def test_a_lazy_loop_logging_to_tensorboard_records_its_losses_without_syncs():
    rng = np.random.default_rng(0)
    x_np, y_np = rng.standard_normal((8, 3)).astype(np.float32), rng.standard_normal((8, 1)).astype(np.float32)
    x, y = lazyscope.tensor(x_np, device="lazy:0"), lazyscope.tensor(y_np, device="lazy:0")
    w = lazyscope.zeros(3, 1, device="lazy:0")
    lm.mark_step()
    lazyscope._C.reset_metrics()
    want, w_np = [], np.zeros((3, 1), np.float32)
    with capture_events() as events, SummaryWriter(log_dir="runs/x") as writer:
        for step in range(4):
            err = x @ w - y
            loss = (err * err).mean()
            writer.add_scalar("train/loss", loss, global_step=step)
            writer.add_scalars("opt", {"lr": 0.1, "momentum": 0.0}, step)
            w = w - (x.t() @ err) * (2 * 0.1 / 8)
            lm.mark_step()
            e = x_np @ w_np - y_np
            want.append(float((e * e).mean()))
            w_np = w_np - (x_np.T @ e) * np.float32(2 * 0.1 / 8)
    counters = lm.counters()
    syncs = {k: v for k, v in counters.items() if k.startswith("SyncCause.") and v}
    assert syncs == {"SyncCause.mark_step": 4}, syncs  # the barriers only: logging read nothing
    scalars = events.of("scalar")
    np.testing.assert_allclose([s["value"] for s in scalars if s["name"] == "train/loss"], want, rtol=1e-5)
    assert [s["value"] for s in scalars if s["name"] == "opt/lr"] == [0.1] * 4
    assert writer.get_logdir() == "runs/x"


def test_histograms_and_hparams_become_named_scalars():
    v = np.array([1.0, 4.0, -2.0, 3.0])
    with capture_events() as events:
        writer = SummaryWriter()
        writer.add_histogram("w", lazyscope.tensor(v), 0)
        writer.add_hparams({"lr": 0.01, "opt": "adam", "layers": 3}, {"hparam/accuracy": 0.9})
        writer.flush()
    got = {s["name"]: s["value"] for s in events.of("scalar")}
    np.testing.assert_allclose([got["w/min"], got["w/mean"], got["w/max"], got["w/std"]],
                               [v.min(), v.mean(), v.max(), v.std(ddof=1)], rtol=1e-6)
    assert got["hparam/lr"] == pytest.approx(0.01) and got["hparam/layers"] == 3 and "hparam/opt" not in got
    assert got["hparam/accuracy"] == pytest.approx(0.9)


def test_what_is_not_a_scalar_warns_once_and_a_closed_writer_refuses():
    writer = SummaryWriter()
    with pytest.warns(UserWarning, match="add_image: not recorded"):
        writer.add_image("img", np.zeros((3, 4, 4)), 0)
    with capture_events() as events:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            writer.add_image("img", np.zeros((3, 4, 4)), 1)  # the second call is silent
    assert events.of("scalar") == []
    writer.close()
    with pytest.raises(RuntimeError, match="add_scalar: the writer was closed"):
        writer.add_scalar("x", 1.0)
