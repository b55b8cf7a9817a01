"""The seeds' multithreading snippet: DataParallel runs one replica per lazy
device in threads; optimizer_step averages the gradients across replicas.

    lazyscope run --devices 2 scripts/examples/data_parallel.py
"""
import lazyscope
from lazyscope import nn, optim
from lazyscope.core import lazy_model as lm
from lazyscope.datasets import SyntheticMNIST
from lazyscope.distributed import data_parallel as dp
from lazyscope.utils.data import DataLoader

lazyscope.manual_seed(0)
train_loader = DataLoader(SyntheticMNIST(1024, seed=0), batch_size=64, shuffle=True, drop_last=True, generator=0)


def MNIST():  # noqa: N802  (the seeds' name)
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10), nn.LogSoftmax(dim=1))


devices = lm.get_lazy_supported_devices()
model_parallel = dp.DataParallel(MNIST, device_ids=devices)


def train_loop_fn(model, loader, device, context):
    loss_fn = nn.NLLLoss()
    optimizer = context.getattr_or("optimizer", lambda: optim.SGD(model.parameters(), lr=0.05, momentum=0.9))
    model.train()
    for step, (data, target) in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(data), target)
        loss.backward()
        lm.optimizer_step(optimizer)  # all-reduce, step; the loader's next() is the barrier
        if lm.is_master_ordinal():
            lazyscope.log("loss", loss)  # one replica's loss, every step, no sync
        if lm.is_master_ordinal() and step % 4 == 0:
            lm.add_step_closure(lambda s, l: print(f"step {s:3d}  loss {l.item():.4f}"), args=(step, loss))
    return loss.item()


print(f"{len(devices)} replica(s) on {devices}")
for epoch in range(1, 3):
    losses = model_parallel(train_loop_fn, train_loader)
    print(f"epoch {epoch}: final loss per device {[round(x, 4) for x in losses]}")
