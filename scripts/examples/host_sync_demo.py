"""Host syncs in a training loop, the seeds' caveat: each of these makes the
host wait for the device in the middle of a step, cutting the step's graph.

- loss.item() every step, before the barrier (prints "live" progress);
- `if loss > 2:` control flow on a device value (bool() reads it);
- data-dependent shapes: boolean-mask indexing / nonzero (host fallbacks,
  when this build has them).

The run's diagnosis lists the sync causes and their lines; host_sync_fixed.py
is the same training without them.

    lazyscope run scripts/examples/host_sync_demo.py
"""
import lazyscope
from lazyscope import nn, optim
from lazyscope.core import lazy_model as lm
from lazyscope.datasets import SyntheticMNIST
from lazyscope.utils.data import DataLoader

lazyscope.manual_seed(0)
device = lm.lazy_device()
loader = DataLoader(SyntheticMNIST(1024, seed=0), batch_size=64, drop_last=True)
model = nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
has_nonzero = hasattr(lazyscope.Tensor, "nonzero")
for step, (data, target) in enumerate(loader):
    optimizer.zero_grad()
    logits = model(data.to(device))
    loss = nn.functional.cross_entropy(logits, target.to(device))
    print(f"step {step:3d}  loss {loss.item():.4f}")   # sync 1: reads the loss mid-step
    if loss > 2.0:                                      # sync 2: control flow on a device value
        print("  (still above 2)")
    if has_nonzero:
        wrong = (logits.argmax(1) != target.to(device)).nonzero()   # sync 3: a data-dependent shape
        print(f"  {wrong.shape[0]} misclassified")
    loss.backward()
    lm.optimizer_step(optimizer, barrier=True)
print(lm.metrics_report())
