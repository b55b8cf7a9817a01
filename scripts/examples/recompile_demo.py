"""Recompilation from a changing shape: 1000 samples in batches of 128 leave
a last batch of 104, a new input shape, so the last step compiles again
(every epoch's last step then hits that second graph). The run's diagnosis
points at the shape and suggests drop_last or padding; see recompile_fixed.py.

    lazyscope run scripts/examples/recompile_demo.py
"""
import lazyscope
from lazyscope import nn, optim
from lazyscope.core import lazy_model as lm
from lazyscope.datasets import SyntheticMNIST
from lazyscope.utils.data import DataLoader

lazyscope.manual_seed(0)
device = lm.lazy_device()
loader = DataLoader(SyntheticMNIST(1000, seed=0), batch_size=128)  # 7 batches of 128, then one of 104
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
