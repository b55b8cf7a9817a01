"""The seeds' single-device MNIST loop: an MLP trained with SGD + momentum.

Synthetic MNIST-shaped data by default (nothing is downloaded); --data DIR
reads the real IDX files. Every step traces the same graph: one uncached
compile for the first step, then cache hits.

    lazyscope run scripts/examples/mnist_mlp.py -- --epochs 2
"""
import argparse

import lazyscope
from lazyscope import nn, optim
from lazyscope.core import lazy_model as lm
from lazyscope.datasets import MNIST, SyntheticMNIST
from lazyscope.utils.data import DataLoader

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--data", help="folder with the MNIST IDX files (default: synthetic data)")
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument("--samples", type=int, default=2048, help="synthetic samples")
parser.add_argument("--batch-size", type=int, default=128)
parser.add_argument("--lr", type=float, default=0.05)
args = parser.parse_args()

lazyscope.manual_seed(0)
dataset = MNIST(args.data) if args.data else SyntheticMNIST(args.samples, seed=0)
# drop_last keeps every batch the same shape: one graph for every step.
train_loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, drop_last=True, generator=0)

device = lm.lazy_device()
model = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                      nn.Linear(256, 10), nn.LogSoftmax(dim=1)).train().to(device)
loss_fn = nn.NLLLoss()
optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

step = 0
for epoch in range(args.epochs):
    for data, target in train_loader:
        optimizer.zero_grad()
        data, target = data.to(device), target.to(device)
        loss = loss_fn(model(data), target)
        loss.backward()
        lazyscope.log("loss", loss)  # recorded once the barrier has computed it: no sync
        lm.optimizer_step(optimizer, barrier=True)  # the barrier runs this step's graph
        if step % 5 == 0:
            print(f"epoch {epoch} step {step:3d}  loss {loss.item():.4f}")  # after the barrier: no extra run
        step += 1
print(f"final loss {loss.item():.4f}")
