"""host_sync_demo.py without host syncs inside the step:

- the loss is recorded with lazyscope.log (no sync) and printed in a step
  closure, after the barrier has computed it;
- the "above 2" flag and the confident and misclassified counts stay tensors
  (a comparison and sums instead of an if, a boolean mask and nonzero), read
  only when printed, after the barrier.

    lazyscope run scripts/examples/host_sync_fixed.py
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


def report(step, loss, above, confident, wrong):
    # Runs after the barrier: these values are already computed, nothing re-runs.
    note = "\n  (still above 2)" if above.item() else ""
    print(f"step {step:3d}  loss {loss.item():.4f}{note}\n"
          f"  {int(confident.item())} confident, {int(wrong.item())} misclassified")


for step, (data, target) in enumerate(loader):
    optimizer.zero_grad()
    target = target.to(device)
    logits = model(data.to(device))
    loss = nn.functional.cross_entropy(logits, target)
    lazyscope.log("loss", loss)                                 # recorded after the barrier, no sync
    above = loss > 2.0                                          # stays on the device
    confident = (logits.softmax(1).amax(1) > 0.2).sum()         # a count instead of the masked rows
    wrong = (logits.argmax(1) != target).sum()                  # a count instead of nonzero's indices
    loss.backward()
    lm.add_step_closure(report, args=(step, loss, above, confident, wrong))
    lm.optimizer_step(optimizer, barrier=True)
print(lm.metrics_report())
