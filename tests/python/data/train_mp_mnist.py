"""A multi-replica MNIST training script of the shape of PyTorch/XLA's
test/test_train_mp_mnist.py (fake data, a BatchNorm CNN, SampleGenerator,
MpDeviceLoader, RateTracker, add_step_closure, mesh_reduce, xmp.spawn,
set_default_dtype), written for LazyScope's tests: only its imports name
lazyscope instead of torch / torch_xla.

Run: LAZYSCOPE_DEVICE_COUNT=N python3 train_mp_mnist.py --num_cores N --out DIR
Each replica writes its final parameters to DIR/replica_<ordinal>.npz.
"""
import argparse
import os
import sys

import numpy as np

import lazyscope as torch
import lazyscope.nn as nn
import lazyscope.nn.functional as F
import lazyscope.optim as optim
import lazyscope.compat.torch_xla as torch_xla  # noqa: F401
from lazyscope.compat.torch_xla import runtime as xr
import lazyscope.compat.torch_xla.debug.metrics as met
import lazyscope.compat.torch_xla.distributed.parallel_loader as pl
import lazyscope.compat.torch_xla.utils.utils as xu
import lazyscope.compat.torch_xla.core.xla_model as xm
import lazyscope.compat.torch_xla.distributed.xla_multiprocessing as xmp

parser = argparse.ArgumentParser()
parser.add_argument("--batch_size", type=int, default=16)
parser.add_argument("--num_epochs", type=int, default=2)
parser.add_argument("--num_cores", type=int, default=1)
parser.add_argument("--lr", type=float, default=0.01)
parser.add_argument("--momentum", type=float, default=0.5)
parser.add_argument("--log_steps", type=int, default=2)
parser.add_argument("--train_samples", type=int, default=256)
parser.add_argument("--test_samples", type=int, default=64)
parser.add_argument("--metrics_debug", action="store_true")
parser.add_argument("--out", default=None)
FLAGS = parser.parse_args()


class MNIST(nn.Module):

    def __init__(self):
        super(MNIST, self).__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.bn1 = nn.BatchNorm2d(10)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.bn2 = nn.BatchNorm2d(20)
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = self.bn1(x)
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = self.bn2(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def _train_update(device, step, loss, tracker, epoch):
    print(f"[{device}] epoch {epoch} step {step} loss={loss.item():.5f} "
          f"rate={tracker.rate():.2f} global_rate={tracker.global_rate():.2f}", flush=True)


def fake_batch(seed):
    # Fake data as PyTorch/XLA's --fake_data, but not all zeros, so that training moves the weights.
    rng = np.random.default_rng(seed)
    data = torch.tensor(rng.standard_normal((FLAGS.batch_size, 1, 28, 28)).astype(np.float32))
    target = torch.tensor(rng.integers(0, 10, FLAGS.batch_size))
    return data, target


def train_mnist(flags):
    torch.manual_seed(1)
    train_loader = xu.SampleGenerator(
        data=fake_batch(0), sample_count=flags.train_samples // flags.batch_size // xm.xrt_world_size())
    test_loader = xu.SampleGenerator(
        data=fake_batch(1), sample_count=flags.test_samples // flags.batch_size // xm.xrt_world_size())

    # Scale learning rate to num cores
    lr = flags.lr * xm.xrt_world_size()

    device = xm.xla_device()
    model = MNIST().to(device)
    # Initialization differs between replica threads: start every replica from the master's parameters.
    if xr.using_pjrt():
        xm.broadcast_master_param(model)
    optimizer = optim.SGD(model.parameters(), lr=lr, momentum=flags.momentum)
    loss_fn = nn.NLLLoss()

    def train_loop_fn(loader, epoch):
        tracker = xm.RateTracker()
        model.train()
        for step, (data, target) in enumerate(loader):
            optimizer.zero_grad()
            output = model(data)
            loss = loss_fn(output, target)
            loss.backward()
            xm.optimizer_step(optimizer)
            tracker.add(flags.batch_size)
            if step % flags.log_steps == 0:
                xm.add_step_closure(_train_update, args=(device, step, loss, tracker, epoch))

    def test_loop_fn(loader):
        total_samples = 0
        correct = 0
        model.eval()
        for data, target in loader:
            output = model(data)
            pred = output.max(1, keepdim=True)[1]
            correct += pred.eq(target.view_as(pred)).sum()
            total_samples += data.size()[0]

        accuracy = 100.0 * correct.item() / total_samples
        accuracy = xm.mesh_reduce('test_accuracy', accuracy, np.mean)
        return accuracy

    train_device_loader = pl.MpDeviceLoader(train_loader, device)
    test_device_loader = pl.MpDeviceLoader(test_loader, device)
    accuracy, max_accuracy = 0.0, 0.0
    for epoch in range(1, flags.num_epochs + 1):
        xm.master_print('Epoch {} train begin'.format(epoch))
        train_loop_fn(train_device_loader, epoch)
        xm.master_print('Epoch {} train end'.format(epoch))
        accuracy = test_loop_fn(test_device_loader)
        xm.master_print('Epoch {} test end, Accuracy={:.2f}'.format(epoch, accuracy))
        max_accuracy = max(accuracy, max_accuracy)
        if flags.metrics_debug:
            xm.master_print(met.metrics_report())

    xm.wait_device_ops()
    if flags.out:
        state = {name: p.cpu().numpy() for name, p in model.state_dict().items()}
        np.savez(os.path.join(flags.out, f"replica_{xm.get_ordinal()}.npz"), accuracy=accuracy, **state)
    xm.master_print('Max Accuracy: {:.2f}%'.format(max_accuracy))
    return max_accuracy


def _mp_fn(index, flags):
    torch.set_default_dtype(torch.float32)
    accuracy = train_mnist(flags)
    if not 0.0 <= accuracy <= 100.0:
        print('Accuracy {} is out of range'.format(accuracy))
        sys.exit(21)


if __name__ == '__main__':
    xmp.spawn(_mp_fn, args=(FLAGS,), nprocs=FLAGS.num_cores)
