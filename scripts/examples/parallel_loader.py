"""The seeds' multiprocessing snippet: spawn one replica per lazy device
(LazyScope runs them as threads), each fed by a ParallelLoader that uploads
batches in the background and ends each step with a barrier.

    lazyscope run --devices 2 scripts/examples/parallel_loader.py
"""
import lazyscope
from lazyscope import nn, optim
from lazyscope.core import lazy_model as lm
from lazyscope.datasets import SyntheticMNIST
from lazyscope.distributed import lazy_multiprocessing as lmp
from lazyscope.distributed import parallel_loader as pl
from lazyscope.utils.data import DataLoader



def _mp_fn(index, samples):
    device = lm.lazy_device()
    # Each replica reads its own shard, as a DistributedSampler would.
    data = SyntheticMNIST(samples, seed=index)
    para_loader = pl.ParallelLoader(DataLoader(data, batch_size=64, drop_last=True), [device])
    lazyscope.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10)).train().to(device)
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step, (x, target) in enumerate(para_loader.per_device_loader(device)):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), target)
        loss.backward()
        lm.optimizer_step(optimizer)  # no barrier: the per-device loader issues it
        if lm.is_master_ordinal():
            lazyscope.log("loss", loss)  # one replica's loss, every step, no sync
        if lm.is_master_ordinal() and step % 4 == 0:
            lm.add_step_closure(lambda s, l: print(f"step {s:3d}  loss {l.item():.4f}"), args=(step, loss))
    return loss.item()


if __name__ == "__main__":
    print("final losses:", lmp.spawn(_mp_fn, args=(1024,)))
