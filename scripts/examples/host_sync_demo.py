"""Host syncs in a training loop, the seeds' caveat: each of these makes the
host wait for the device in the middle of a step, cutting the step's graph.

- loss.item() every step, before the barrier (prints "live" progress);
- `if loss > 2:` control flow on a device value (bool() reads it);
- data-dependent shapes: boolean-mask indexing (logits[mask]) and nonzero()
  have outputs whose size depends on the values, so they run on the host (a
  fallback), reading their operands back every step.

The run's diagnosis lists the sync causes and fallbacks with their lines;
host_sync_fixed.py is the same training without them.

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
for step, (data, target) in enumerate(loader):
    optimizer.zero_grad()
    target = target.to(device)
    logits = model(data.to(device))
    loss = nn.functional.cross_entropy(logits, target)
    print(f"step {step:3d}  loss {loss.item():.4f}")          # sync: item() reads the loss mid-step
    if loss > 2.0:                                             # sync: control flow on a device value
        print("  (still above 2)")
    confident = logits[logits.softmax(1).amax(1) > 0.2]        # fallback: a boolean mask picks the rows
    wrong = (logits.argmax(1) != target).nonzero()             # fallback: nonzero's indices
    print(f"  {confident.shape[0]} confident, {wrong.shape[0]} misclassified")
    del confident, wrong  # host-computed, data-sized: keep them out of the step's graph
    loss.backward()
    lazyscope.log("loss", loss)  # the sync-free way to record it (see host_sync_fixed.py)
    lm.optimizer_step(optimizer, barrier=True)
print(lm.metrics_report())
