"""Linear regression on lazy:0 with hand-written gradients.

The smallest training loop that shows the engine's core behaviour: every step
traces the same graph, so the first step compiles it and every later step is
a cache hit. Run it with:

    lazyscope run scripts/examples/linear_regression.py -- --steps 50
"""
import argparse

import numpy as np

import lazyscope
from lazyscope.core import lazy_model as lm

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--steps", type=int, default=50)
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args()

device = lm.lazy_device()
rng = np.random.default_rng(0)
n, features = 512, 16
true_w = rng.standard_normal((features, 1)).astype(np.float32)
x_host = rng.standard_normal((n, features)).astype(np.float32)
y_host = x_host @ true_w + 0.01 * rng.standard_normal((n, 1)).astype(np.float32)

x = lazyscope.tensor(x_host, device=device)
y = lazyscope.tensor(y_host, device=device)
w = lazyscope.zeros(features, 1, device=device)

for step in range(args.steps):
    error = x @ w - y                              # [n, 1]
    loss = (error * error).sum() * (1.0 / n)       # mean squared error
    grad = x.t() @ error * (2.0 / n)               # d loss / d w
    w = w - grad * args.lr
    lazyscope.log("loss", loss)                    # recorded after the barrier, no sync
    lm.mark_step()                                 # barrier: run this step's graph
    if step % 10 == 0 or step == args.steps - 1:
        print(f"step {step:3d}  loss {loss.item():.6f}")

distance = float(np.abs(w.numpy() - true_w).max())
print(f"max |w - true_w| = {distance:.4f}")
