"""LazyScope against PyTorch eager, side by side in one process.

Trains three models on synthetic data with SGD + momentum, alternating the
set-ups step block by step block (A B A B ...), and prints the median ms per
training step of each, the ratios, and the MLP's matrix-product floor (its
GEMM FLOPs at the SGEMM rate measured in the same run with NumPy):

  - MNIST MLP 784-512-256-10, batch 128
  - the classic MNIST CNN (two 5x5 convs, max-pool, dropout, two linear), batch 64
  - the transformer of scripts/examples/char_transformer.py scaled to
    4 layers, width 256, sequence 64, batch 16

LazyScope runs on `lazy:0` and on `cpu`; PyTorch eager in every thread set-up
tried (torch.set_num_threads 1 and 2 for its OpenMP pool, OpenBLAS's own
thread count 1 and 2, set separately) and the best is reported.

    LAZYSCOPE_BUILD_DIR=$PWD/build/release /usr/bin/python3 benchmarks/vs_pytorch.py
    ... --models cnn --rounds 5 --steps 10
    ... --donation-ab --gemm-parts-ab 4   (lazy:0 variants switched at run time, alternated too)
    ... --gemm-split-ab legacy,blas        (lazy:0 with other GEMM splits, LAZYSCOPE_GEMM_SPLIT)

PyTorch is an optional dependency of this benchmark only (Debian's
python3-torch: `sudo apt-get install --no-install-recommends python3-torch`).
"""
import argparse
import ctypes
import os
import statistics
import sys
import time
from pathlib import Path

# Threads that wait for work sleep instead of spinning: with OpenMP's default
# (spin), two libraries' pools on two shared cores steal each other's time
# and every set-up with two threads gets several times slower. It applies to
# PyTorch and LazyScope alike (one OpenMP runtime); must precede their import.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BUILD = Path(os.environ.get("LAZYSCOPE_BUILD_DIR", ROOT / "build" / "release"))
sys.path.insert(0, str(BUILD / "python"))

try:
    import torch
except ImportError:
    sys.exit("vs_pytorch.py needs PyTorch, an optional dependency of this benchmark only.\n"
             "On Debian: sudo apt-get install --no-install-recommends python3-torch\n"
             "(then run it again with /usr/bin/python3).")

import lazyscope  # noqa: E402
from lazyscope.core import lazy_model as lm  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_models import CTX, MAKERS, VOCAB, batches, openblas  # noqa: E402


# --- thread set-ups -----------------------------------------------------------

OPENBLAS = openblas()


# The OpenMP runtime PyTorch and LazyScope's oneDNN share (Debian builds both
# on libgomp): its thread count for the calling thread, without PyTorch.
try:
    GOMP = ctypes.CDLL("libgomp.so.1")
except OSError:
    GOMP = None


def set_threads(omp, blas, via_torch=True):
    """OpenMP's and OpenBLAS's thread counts for the next block of steps.

    LazyScope's set-ups set OpenMP's count (oneDNN inside LazyScope reads
    it) through libgomp itself, not torch.set_num_threads: that call also
    resizes PyTorch's own thread pools, whose new threads then spin for
    ~30 ms and took a core from the LazyScope block it preceded (an MLP step
    2.3 -> 3.9 ms for its first ~8 steps; --lazyscope-threads-via torch
    measures it that way)."""
    if via_torch or GOMP is None:
        torch.set_num_threads(omp)  # PyTorch's intra-op pool (OpenMP)
    else:
        GOMP.omp_set_num_threads(omp)
    if OPENBLAS is not None:
        OPENBLAS.openblas_set_num_threads(blas)


class Trainer:
    """One model on one side (a library and device); `step()` is a full step."""

    def __init__(self, model, side, data):
        self.model_name, self.side, self.data, self.i = model, side, data, 0
        self.torch = side.startswith("torch")
        # The A/B set-ups of --donation-ab and --gemm-parts-ab: lazy:0 with
        # buffer donation off, or each thread's share of a GEMM in N parts.
        self.donation = side != "lazyscope lazy:0 no donation"
        self.gemm_parts = int(side.rsplit(" ", 1)[1]) if side.startswith("lazyscope lazy:0 gemm parts") else 1
        # --gemm-split-ab: how each matrix product is shared by the threads.
        self.gemm_split = side.rsplit(" ", 1)[1] if side.startswith("lazyscope lazy:0 split ") else "auto"
        lib = torch if self.torch else lazyscope
        self.lib = lib
        lib.manual_seed(0)
        self.device = "cpu" if self.torch or side == "lazyscope cpu" else lm.lazy_device()
        self.net = MAKERS[model](lib.nn, lib.nn.functional).to(self.device)
        self.opt = lib.optim.SGD(self.net.parameters(), lr=0.01, momentum=0.9)
        if model == "transformer":
            mask = np.triu(np.ones((CTX, CTX), dtype=bool), k=1)
            self.extra = (self.tensor(np.arange(CTX)), self.tensor(mask))

    def tensor(self, a):
        return torch.from_numpy(a) if self.torch else lazyscope.tensor(a, device=self.device)

    def step(self):
        x, y = self.data[self.i % len(self.data)]
        self.i += 1
        if not self.torch:
            lazyscope._C.set_buffer_donation(self.donation)
            lazyscope._C.set_gemm_parts_per_thread(self.gemm_parts)
            lazyscope._C.set_gemm_split(self.gemm_split)
        x, y = self.tensor(x), self.tensor(y)
        F = self.lib.nn.functional
        self.opt.zero_grad()
        if self.model_name == "transformer":
            logits = self.net(x, *self.extra)
            loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
        elif self.model_name == "cnn":
            loss = F.nll_loss(self.net(x), y)
        else:
            loss = F.cross_entropy(self.net(x), y)
        loss.backward()
        if self.torch or self.side == "lazyscope cpu":
            self.opt.step()
        else:
            lm.optimizer_step(self.opt, barrier=True)
        return loss.item()  # the same small read on every side: the step has finished


def sgemm_gflops(threads):
    """NumPy's (OpenBLAS's) SGEMM rate on 1024x1024 operands."""
    set_threads(1, threads)
    a = np.random.default_rng(0).standard_normal((1024, 1024), dtype=np.float32)
    b = a.copy()
    a @ b
    times = []
    for _ in range(7):
        t = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t)
    return 2 * 1024**3 / statistics.median(times) / 1e9


def mlp_gemm_flops(batch=128):
    """The MLP step's matrix-product FLOPs: forward, weight gradients, and
    input gradients of every layer but the first."""
    layers = [(784, 512), (512, 256), (256, 10)]
    fwd = sum(2 * batch * i * o for i, o in layers)
    data_grads = sum(2 * batch * i * o for i, o in layers[1:])
    return 2 * fwd + data_grads


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp,cnn,transformer")
    parser.add_argument("--rounds", type=int, default=7, help="alternations of all set-ups")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per set-up and round")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--donation-ab", action="store_true",
                        help="also run lazy:0 with buffer donation off (in-place optimizer updates), alternated")
    parser.add_argument("--gemm-parts-ab", type=int, default=0, metavar="N",
                        help="also run lazy:0 with each thread's share of a GEMM split in N parts, alternated")
    parser.add_argument("--settle", type=float, default=0.25,
                        help="seconds between set-up blocks, for OpenBLAS's spinning threads to sleep")
    parser.add_argument("--gemm-split-ab", default="", metavar="MODES",
                        help="also run lazy:0 with these GEMM splits (comma-separated: rows, columns, blas, "
                             "legacy), alternated")
    parser.add_argument("--lazyscope-threads-via", choices=("gomp", "torch"), default="gomp",
                        help="how LazyScope's set-ups set OpenMP's thread count: libgomp's omp_set_num_threads "
                             "(default) or torch.set_num_threads, whose pool resizing spins beside the next block")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    thread_counts = sorted({1, min(2, cores)})
    torch_setups = [(f"torch omp={o} blas={b}", o, b) for o in thread_counts for b in thread_counts]
    # LazyScope's own set-up: all cores for OpenMP (oneDNN); OpenBLAS at one
    # thread, as the engine holds it (its GEMMs are split over its own pool,
    # one OpenBLAS thread per part): raised to 2 by the harness, OpenBLAS's
    # woken server thread spun beside the block until the engine's first
    # product set it back.
    ours = [("lazyscope lazy:0", cores, 1), ("lazyscope cpu", cores, 1)]
    if args.donation_ab:
        ours.insert(1, ("lazyscope lazy:0 no donation", cores, 1))
    if args.gemm_parts_ab:
        ours.insert(1, (f"lazyscope lazy:0 gemm parts {args.gemm_parts_ab}", cores, 1))
    for mode in filter(None, args.gemm_split_ab.split(",")):
        ours.insert(1, (f"lazyscope lazy:0 split {mode}", cores, 1))
    print(f"torch {torch.__version__}, numpy {np.__version__}, {cores} cores, "
          f"LazyScope's OpenMP threads set via {args.lazyscope_threads_via}, "
          f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}, "
          f"OpenBLAS thread control: {'yes' if OPENBLAS is not None else 'NO (found no libopenblas)'}")
    for model in args.models.split(","):
        data = batches(model, np.random.default_rng(0))
        setups = ours + torch_setups
        trainers = {}
        def use(name, omp, blas):
            set_threads(omp, blas, via_torch=not name.startswith("lazyscope") or args.lazyscope_threads_via == "torch")

        for name, omp, blas in setups:
            use(name, omp, blas)
            trainers[name] = Trainer(model, name, data)
            for _ in range(args.warmup):
                trainers[name].step()
        times = {name: [] for name, _, _ in setups}
        for _ in range(args.rounds):
            for name, omp, blas in setups:  # A B A B ...
                # OpenBLAS's threads spin in sched_yield for ~0.1 s (2^28
                # cycles) after their last product: a set-up following one
                # with blas=2 would share the cores with them. Each block
                # starts after they have gone to sleep.
                time.sleep(args.settle)
                use(name, omp, blas)
                for _ in range(args.steps):
                    t = time.perf_counter()
                    trainers[name].step()
                    times[name].append((time.perf_counter() - t) * 1e3)
        med = {name: statistics.median(v) for name, v in times.items()}
        best_torch = min((n for n, _, _ in torch_setups), key=med.get)
        print(f"\n{model}: median ms/step over {args.rounds} rounds x {args.steps} steps")
        for name, _, _ in setups:
            mark = "  <- PyTorch's best" if name == best_torch else ""
            print(f"  {name:26s} {med[name]:8.2f} ms{mark}")
        for name in [n for n, _, _ in ours]:
            print(f"  {name} speed vs PyTorch's best: {med[best_torch] / med[name]:.2f}x")
        if model == "mlp":
            rate = sgemm_gflops(cores)
            floor = mlp_gemm_flops() / (rate * 1e9) * 1e3
            print(f"  SGEMM (NumPy/OpenBLAS, 1024^2, {cores} threads): {rate:.1f} GFLOP/s; "
                  f"GEMM floor of the step {floor:.2f} ms; lazy:0 / floor = {med['lazyscope lazy:0'] / floor:.2f}x; "
                  f"PyTorch's best / floor = {med[best_torch] / floor:.2f}x")
            for name, _, _ in ours[1:]:
                if name.startswith("lazyscope lazy:0 "):
                    print(f"  {name[10:]} / floor = {med[name] / floor:.2f}x")


if __name__ == "__main__":
    main()
