"""A tiny character-level transformer language model on an embedded text:
token + position embeddings, pre-norm blocks of causal multi-head attention
and an MLP, AdamW with a cosine schedule (the lr is a graph input: one graph
for every step), gradient clipping without host syncs.

    lazyscope run scripts/examples/char_transformer.py -- --steps 60
"""
import argparse

import numpy as np

import lazyscope
from lazyscope import nn, optim
from lazyscope.core import lazy_model as lm

TEXT = """\
It was the best of times, it was the worst of times, it was the age of wisdom,
it was the age of foolishness, it was the epoch of belief, it was the epoch of
incredulity, it was the season of Light, it was the season of Darkness, it was
the spring of hope, it was the winter of despair, we had everything before us,
we had nothing before us, we were all going direct to Heaven, we were all going
direct the other way.
"""

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--steps", type=int, default=60)
parser.add_argument("--context", type=int, default=32)
parser.add_argument("--batch-size", type=int, default=16)
args = parser.parse_args()

chars = sorted(set(TEXT))
ids = np.array([chars.index(c) for c in TEXT], dtype=np.int64)
vocab, ctx, dim = len(chars), args.context, 64


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, num_heads=4, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class CharLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(ctx, dim)
        self.blocks = nn.ModuleList([Block() for _ in range(2)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx, positions, mask):
        x = self.tok(idx) + self.pos(positions)
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.ln(x))


lazyscope.manual_seed(0)
device = lm.lazy_device()
model = CharLM().to(device)
optimizer = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps)
# Uploaded once: True above the diagonal = may not attend to the future.
mask = lazyscope.tensor(np.triu(np.ones((ctx, ctx), dtype=bool), k=1), device=device)
positions = lazyscope.tensor(np.arange(ctx), device=device)
rng = np.random.default_rng(0)
for step in range(args.steps):
    starts = rng.integers(0, len(ids) - ctx - 1, args.batch_size)
    x = lazyscope.tensor(np.stack([ids[s:s + ctx] for s in starts]), device=device)
    y = lazyscope.tensor(np.stack([ids[s + 1:s + ctx + 1] for s in starts]), device=device)
    optimizer.zero_grad()
    logits = model(x, positions, mask)
    loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    lazyscope.log("loss", loss)  # recorded once the barrier has computed it: no sync
    lm.optimizer_step(optimizer, barrier=True)
    scheduler.step()
    if step % 10 == 0 or step == args.steps - 1:
        print(f"step {step:3d}  loss {loss.item():.4f}  lr {scheduler.get_last_lr()[0]:.5f}")
print(f"uncached compiles: {lm.counters().get('UncachedCompile', 0)}")
