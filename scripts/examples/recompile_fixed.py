"""recompile_demo.py fixed: drop_last=True makes every batch 128 samples, so
the step's graph has one shape and compiles once. (Padding the last batch to
128 and masking the padded rows out of the loss is the alternative when no
sample may be dropped.)

    lazyscope run scripts/examples/recompile_fixed.py
"""
import lazyscope
from lazyscope import nn, optim
from lazyscope.core import lazy_model as lm
from lazyscope.datasets import SyntheticMNIST
from lazyscope.utils.data import DataLoader

lazyscope.manual_seed(0)
device = lm.lazy_device()
loader = DataLoader(SyntheticMNIST(1000, seed=0), batch_size=128, drop_last=True)
model = nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
optimizer = optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(2):
    for data, target in loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(data.to(device)), target.to(device))
        loss.backward()
        lazyscope.log("loss", loss)
        lm.optimizer_step(optimizer, barrier=True)
    compiles = lm.counters().get("UncachedCompile", 0)  # absent on the cpu device (--device cpu)
    print(f"epoch {epoch}  loss {loss.item():.4f}  uncached compiles so far {compiles}")
