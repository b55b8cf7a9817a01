"""Data-parallel MLP over worker processes, with torch.distributed's names,
and a classic slowdown: rank 0 evaluates on held-out data inside every
fourth step, so the other ranks wait for it in the gradients' all_reduce.
The Timeline shows a lane per rank (rank 0's tall compute, the others'
collective wait) and the diagnosis names the straggler.

    lazyscope run --nproc-per-node 2 scripts/examples/distributed_mlp.py
"""
import lazyscope
from lazyscope import nn, optim
from lazyscope.core import lazy_model as lm
from lazyscope.datasets import SyntheticMNIST
from lazyscope.utils.data import DataLoader
import lazyscope.distributed as dist

dist.init_process_group()
rank, world = dist.get_rank(), dist.get_world_size()
device = lm.lazy_device()
lazyscope.manual_seed(0)

dataset = SyntheticMNIST(2048, seed=0)
sampler = dist.DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=64, sampler=sampler, drop_last=True)
held_out = SyntheticMNIST(4096, seed=1)

model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)).to(device)
optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()

step = 0
for epoch in range(2):
    sampler.set_epoch(epoch)
    for data, target in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(data.to(device)), target.to(device))
        loss.backward()
        if rank == 0 and step % 4 == 0:
            # The slowdown: only the master works here, inside the step, and
            # reads the result (a sync) before the all_reduce below.
            with lazyscope.no_grad():
                x, y = zip(*[held_out[i] for i in range(4096)])
                logits = model(lazyscope.stack(list(x)).to(device))
                accuracy = (logits.argmax(1) == lazyscope.tensor(list(y)).to(device)).float().mean().item()
            print(f"step {step:3d}  held-out accuracy {accuracy:.3f}")
        lm.optimizer_step(optimizer)  # all_reduce of the gradients, in the step's graph
        lm.mark_step()
        if rank == 0:
            lazyscope.log("loss", loss)
        step += 1
lm.master_print(f"{world} ranks trained {step} steps each")
