"""The benchmark models, written once against the torch.nn-shaped API of
either library (vs_pytorch.py trains them with PyTorch and LazyScope;
omp_wait_policy.py with LazyScope only, so nothing here imports torch)."""
import ctypes
import ctypes.util

import numpy as np


def openblas():
    """The OpenBLAS that NumPy, PyTorch and LazyScope share in this process
    (its thread count is process-wide), or None."""
    for name in ("openblas", "openblas64_", "blas"):
        path = ctypes.util.find_library(name)
        if not path:
            continue
        lib = ctypes.CDLL(path)
        if hasattr(lib, "openblas_set_num_threads"):
            return lib
    return None


def make_mlp(nn, F):
    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2, self.fc3 = nn.Linear(784, 512), nn.Linear(512, 256), nn.Linear(256, 10)

        def forward(self, x):
            return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))

    return MLP()


def make_cnn(nn, F):
    class Net(nn.Module):  # scripts/examples/mnist_cnn.py
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
            self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
            self.conv2_drop = nn.Dropout2d()
            self.fc1 = nn.Linear(320, 50)
            self.fc2 = nn.Linear(50, 10)

        def forward(self, x):
            x = F.relu(F.max_pool2d(self.conv1(x), 2))
            x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
            x = F.relu(self.fc1(x.flatten(1)))
            x = F.dropout(x, training=self.training)
            return F.log_softmax(self.fc2(x), dim=1)

    return Net()


VOCAB, CTX, DIM, LAYERS, HEADS = 65, 64, 256, 4, 4


def make_transformer(nn, F):
    class Block(nn.Module):  # scripts/examples/char_transformer.py, scaled
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
            self.attn = nn.MultiheadAttention(DIM, num_heads=HEADS, batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

        def forward(self, x, mask):
            h = self.ln1(x)
            x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
            return x + self.mlp(self.ln2(x))

    class CharLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(VOCAB, DIM)
            self.pos = nn.Embedding(CTX, DIM)
            self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
            self.ln = nn.LayerNorm(DIM)
            self.head = nn.Linear(DIM, VOCAB)

        def forward(self, idx, positions, mask):
            x = self.tok(idx) + self.pos(positions)
            for block in self.blocks:
                x = block(x, mask)
            return self.head(self.ln(x))

    return CharLM()


def batches(model, rng, n=4):
    """A few synthetic batches (inputs, targets) as NumPy arrays, reused in turn."""
    out = []
    for _ in range(n):
        if model == "mlp":
            out.append((rng.standard_normal((128, 784), dtype=np.float32), rng.integers(0, 10, 128)))
        elif model == "cnn":
            out.append((rng.standard_normal((64, 1, 28, 28), dtype=np.float32), rng.integers(0, 10, 64)))
        else:
            ids = rng.integers(0, VOCAB, (16, CTX + 1))
            out.append((ids[:, :-1].copy(), ids[:, 1:].copy()))
    return out


MAKERS = {"mlp": make_mlp, "cnn": make_cnn, "transformer": make_transformer}
