"""bf16 mode, the seeds' XLA_USE_BF16: with `lazyscope run --bf16` (or
LAZYSCOPE_USE_BF16=1 / XLA_USE_BF16=1 set before the run), float tensors on
the lazy devices are stored as bfloat16 and every kernel result is rounded to
bfloat16, while the tensors still report float32; moving them to the CPU gives
float32 again. Compare a run with and without it:

    lazyscope run --name fp32 scripts/examples/bf16.py
    lazyscope run --name bf16 --bf16 scripts/examples/bf16.py
    lazyscope compare fp32 bf16

At the end the script also evaluates the trained model on one batch with the
mode off and on (_C.set_bf16_mode), so one run shows both: the same dtype
reported, a slightly different loss.
"""
import lazyscope
from lazyscope import _C, nn, optim
from lazyscope.core import lazy_model as lm
from lazyscope.datasets import SyntheticMNIST
from lazyscope.utils.data import DataLoader

bf16 = _C.bf16_mode()  # set at start-up from LAZYSCOPE_USE_BF16 / XLA_USE_BF16
print(f"bf16 mode: {'on' if bf16 else 'off'}")
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
        lazyscope.log("loss", loss)
        lm.optimizer_step(optimizer, barrier=True)
    print(f"epoch {epoch}  loss {loss.item():.6f}")

weight = model[1].weight
print(f"the weight reports {weight.dtype} on {weight.device} and {weight.cpu().dtype} on the CPU")

# The same trained weights and batch, evaluated with float32 math and with
# bf16 math: the loss differs in the third or fourth digit. (Two call sites,
# one per mode, so that neither reads as a recompile of the other.)
data, target = next(iter(loader))
data, target = data.to(device), target.to(device)
with lazyscope.no_grad():
    _C.set_bf16_mode(False)
    fp32 = nn.functional.cross_entropy(model(data), target)
    fp32_value = fp32.item()
    _C.set_bf16_mode(True)
    bf16_loss = nn.functional.cross_entropy(model(data), target)
    bf16_value = bf16_loss.item()
_C.set_bf16_mode(bf16)
print(f"one batch, float32 math: loss {fp32_value:.6f} (reports {fp32.dtype})")
print(f"one batch, bf16 math:    loss {bf16_value:.6f} (reports {bf16_loss.dtype}), "
      f"difference {abs(bf16_value - fp32_value):.2e}")
