"""bf16 mode, the seeds' XLA_USE_BF16: with LAZYSCOPE_USE_BF16=1 (or
XLA_USE_BF16=1) set before the run, float tensors are stored as bfloat16 on
the lazy devices while they still report float32; moving them to the CPU
gives float32 again. Compare a run with and without it:

    lazyscope run --name fp32 scripts/examples/bf16.py
    LAZYSCOPE_USE_BF16=1 lazyscope run --name bf16 scripts/examples/bf16.py
    lazyscope compare fp32 bf16
"""
import os

import lazyscope
from lazyscope import nn, optim
from lazyscope.core import lazy_model as lm
from lazyscope.datasets import SyntheticMNIST
from lazyscope.utils.data import DataLoader

requested = any(os.environ.get(k, "0") not in ("", "0") for k in ("LAZYSCOPE_USE_BF16", "XLA_USE_BF16"))
# lazyscope.log(name, value) records a scalar in the run history, in builds that
# have it (plain lazyscope.log is the elementwise logarithm).
log = lazyscope.log if "name" in (lazyscope.log.__doc__ or "") else None
lazyscope.manual_seed(0)
device = lm.lazy_device()
loader = DataLoader(SyntheticMNIST(1024, seed=0), batch_size=128, drop_last=True)
model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)
optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for epoch in range(2):
    for data, target in loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(data.to(device)), target.to(device))
        loss.backward()
        lm.optimizer_step(optimizer, barrier=True)
        if log:
            log("loss", loss)
    print(f"epoch {epoch}  loss {loss.item():.4f}")
weight = model[1].weight
print(f"bf16 requested: {requested}; the weight reports {weight.dtype} on {weight.device}, "
      f"{weight.cpu().dtype} on the CPU")
