"""Whole training loops of models built from the layers added to the
PyTorch surface, on lazy:0 as a user script runs them: a convolutional
autoencoder (ConvTranspose2d, InstanceNorm2d, PReLU, ReflectionPad2d,
PixelShuffle, Upsample), a seq2seq nn.Transformer, and a GRUCell/RNN
tagger with NAdam and CyclicLR. Each must learn (its loss falls well below
its start) and, after the first step, replay one compiled graph: a step
that recompiles every time is what a lazy engine must not do."""
import numpy as np
import pytest

import lazyscope
from lazyscope import _C, nn, optim
from lazyscope.core import lazy_model as lm

DEV = "lazy:0"


def train(model, make_batch, loss_fn, make_opt, steps, sched=None, settle=1):
    """Trains; returns the losses and the uncached compiles after step `settle` (the graphs a step may add
    before its shape settles: the first step's, and RAdam's second once its rectification turns on)."""
    lazyscope.manual_seed(0)
    opt = make_opt(model.parameters())
    scheduler = sched(opt) if sched else None
    losses = []
    for step in range(steps):
        inputs, target = make_batch(step)
        opt.zero_grad()
        loss = loss_fn(model, inputs, target)
        loss.backward()
        lm.optimizer_step(opt, barrier=True)
        if scheduler is not None:
            scheduler.step()
        losses.append(loss.item())
        if step == settle:
            _C.reset_metrics()  # from here on every step must be a cache hit
    return losses, lm.counters().get("UncachedCompile", 0)


def test_conv_autoencoder_learns_and_compiles_once():
    _C.clear_compile_cache()
    lazyscope.manual_seed(1)
    model = nn.Sequential(
        nn.ReflectionPad2d(1), nn.Conv2d(1, 8, 3, stride=2), nn.InstanceNorm2d(8, affine=True), nn.PReLU(8),
        nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.Hardswish(),
        nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1), nn.SELU(),
        nn.Conv2d(8, 4, 3, padding=1), nn.PixelShuffle(2), nn.Upsample(size=(16, 16), mode="bilinear"),
        nn.Sigmoid()).to(DEV)
    rng = np.random.default_rng(0)
    images = [(rng.random((8, 1, 16, 16)) > 0.7).astype(np.float32) for _ in range(4)]

    def batch(step):
        x = lazyscope.tensor(images[step % 4], device=DEV)
        return x, x

    losses, recompiles = train(model, batch, lambda m, x, y: nn.functional.mse_loss(m(x), y),
                               lambda p: optim.Adamax(p, lr=0.02), 40)
    assert losses[-1] < 0.6 * losses[0], losses
    assert recompiles == 0


def test_seq2seq_transformer_learns_to_copy_and_compiles_once():
    _C.clear_compile_cache()
    lazyscope.manual_seed(2)
    vocab, length = 8, 6

    class Copy(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, 16)
            self.core = nn.Transformer(16, 2, 1, 1, 32, dropout=0.0, batch_first=True)
            self.head = nn.Linear(16, vocab)
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(length))

        def forward(self, src, tgt_in):
            return self.head(self.core(self.embed(src), self.embed(tgt_in), tgt_mask=self.mask))

    model = Copy().to(DEV)
    rng = np.random.default_rng(3)

    def batch(step):
        src = rng.integers(1, vocab, (16, length))
        tgt_in = np.concatenate([np.zeros((16, 1), dtype=src.dtype), src[:, :-1]], 1)  # 0: start token
        return (lazyscope.tensor(src, device=DEV), lazyscope.tensor(tgt_in, device=DEV)), \
            lazyscope.tensor(src, device=DEV)

    def loss_fn(m, inputs, target):
        return nn.functional.cross_entropy(m(*inputs).reshape(-1, vocab), target.reshape(-1))

    # RAdam's step changes form once, at its 6th step (the rectification turns on): one more graph.
    losses, recompiles = train(model, batch, loss_fn, lambda p: optim.RAdam(p, lr=0.02), 200, settle=6)
    assert np.mean(losses[-5:]) < 0.5 * losses[0], losses
    assert recompiles == 0


@pytest.mark.parametrize("cell", ["gru_cell", "rnn"])
def test_recurrent_tagger_with_nadam_and_cyclic_lr(cell):
    _C.clear_compile_cache()
    lazyscope.manual_seed(4)
    steps, classes = 5, 3

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = nn.GRUCell(4, 12) if cell == "gru_cell" else nn.RNN(4, 12, nonlinearity="relu")
            self.out = nn.Linear(12, classes)

        def forward(self, x):  # x [T, N, 4]
            if cell == "rnn":
                return self.out(self.cell(x)[0])
            h, outs = None, []
            for t in range(steps):
                h = self.cell(x[t], h)
                outs.append(h)
            return self.out(lazyscope.stack(outs))

    model = Tagger().to(DEV)
    rng = np.random.default_rng(5)

    def batch(step):
        x = rng.standard_normal((steps, 8, 4)).astype(np.float32)
        y = (x[..., 0] > 0).astype(np.int64) + (x[..., 1] > 1).astype(np.int64)  # a rule the tagger can learn
        return lazyscope.tensor(x, device=DEV), lazyscope.tensor(y, device=DEV)

    def loss_fn(m, x, y):
        return nn.functional.cross_entropy(m(x).reshape(-1, classes), y.reshape(-1))

    losses, recompiles = train(model, batch, loss_fn, lambda p: optim.NAdam(p, lr=0.02), 80,
                               sched=lambda o: optim.lr_scheduler.CyclicLR(o, 0.005, 0.03, 10, cycle_momentum=False))
    assert np.mean(losses[-10:]) < 0.7 * np.mean(losses[:5]), losses
    assert recompiles == 0
