"""The classic MNIST CNN (two 5x5 convolutions, max-pooling, dropout, two
linear layers) on synthetic MNIST, one lazy device.

    lazyscope run scripts/examples/mnist_cnn.py -- --steps 20
"""
import argparse

import lazyscope
from lazyscope import nn, optim
from lazyscope.core import lazy_model as lm
from lazyscope.datasets import SyntheticMNIST
from lazyscope.nn import functional as F
from lazyscope.utils.data import DataLoader

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--steps", type=int, default=20)
parser.add_argument("--batch-size", type=int, default=64)
args = parser.parse_args()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = F.relu(self.fc1(x.flatten(1)))
        x = F.dropout(x, training=self.training)
        return F.log_softmax(self.fc2(x), dim=1)


lazyscope.manual_seed(0)
device = lm.lazy_device()
model = Net().to(device)
optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.5)
loader = DataLoader(SyntheticMNIST(args.steps * args.batch_size, seed=0), batch_size=args.batch_size, drop_last=True)
for step, (data, target) in enumerate(loader):
    optimizer.zero_grad()
    loss = F.nll_loss(model(data.to(device)), target.to(device))
    loss.backward()
    lazyscope.log("loss", loss)  # recorded once the barrier has computed it: no sync
    lm.optimizer_step(optimizer, barrier=True)
    if step % 5 == 0:
        print(f"step {step:3d}  loss {loss.item():.4f}")
