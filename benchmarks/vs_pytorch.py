"""LazyScope against PyTorch eager, side by side in one process.

Trains three models on synthetic data with SGD + momentum, alternating the
set-ups step block by step block (A B A B ...), and prints the median ms per
training step of each, the ratios, and the MLP's matrix-product floor (its
GEMM FLOPs at the SGEMM rate measured with NumPy in a block of every round,
alternated with the steps, so that rate and steps see the same load; the
median rate over the rounds, and each round's step over its own floor):

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
    OMP_WAIT_POLICY=PASSIVE ... --models cnn     (one process, one policy: the behaviour before)
    ... --models cnn --by-position               (also each set-up's median per step position in its block)

Every set-up runs under both OpenMP wait policies, PASSIVE and ACTIVE
(--omp-policies; or only the one OMP_WAIT_POLICY names when the caller sets
it). The policy is read once per process, so this runs a child process per
policy and round, policies alternated (A B A B ...), each child one round of
every set-up, and PyTorch's best is taken over every policy and thread
set-up. In a child each set-up is warmed up right before its block and
PyTorch's two-thread set-ups come last: under ACTIVE an OpenMP team, once
started, spins for good and would take a core from every block after it.

PyTorch is an optional dependency of this benchmark only (Debian's
python3-torch: `sudo apt-get install --no-install-recommends python3-torch`).
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

# OpenMP's wait policy is read once, when libgomp loads (with PyTorch or
# LazyScope), so it must be set before their import. Unless the caller set
# one, main() measures every set-up under PASSIVE (idle OpenMP threads sleep;
# LazyScope's own default) and ACTIVE (they spin: PyTorch's two-thread
# set-ups may gain) in child processes; this process itself runs PASSIVE.
USER_POLICY = os.environ.get("OMP_WAIT_POLICY")
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


FLOOR = "sgemm 1024^2"  # the GEMM-rate block of the MLP's rounds (times: ms per product)
FLOOR_CALLS = 7


def sgemm_ms(threads, calls=FLOOR_CALLS):
    """NumPy's (OpenBLAS's) SGEMM on 1024x1024 operands, `threads` OpenBLAS
    threads: ms per product, one warm-up product first."""
    set_threads(1, threads)
    a = np.random.default_rng(0).standard_normal((1024, 1024), dtype=np.float32)
    b = a.copy()
    a @ b
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        a @ b
        times.append((time.perf_counter() - t) * 1e3)
    return times


def gflops(ms_per_product):
    return 2 * 1024**3 / (ms_per_product * 1e-3) / 1e9


def floor_per_round(step_ms, floor_ms, steps):
    """Each round's median step over the GEMM floor at that round's own
    SGEMM rate (rounds in order: `steps` step times and FLOOR_CALLS
    products each)."""
    rounds = min(len(step_ms) // steps, len(floor_ms) // FLOOR_CALLS)
    out = []
    for r in range(rounds):
        rate = gflops(statistics.median(floor_ms[r * FLOOR_CALLS:(r + 1) * FLOOR_CALLS]))
        floor = mlp_gemm_flops() / (rate * 1e9) * 1e3
        out.append(statistics.median(step_ms[r * steps:(r + 1) * steps]) / floor)
    return out


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
    parser.add_argument("--omp-policies", default=USER_POLICY or "PASSIVE,ACTIVE", metavar="POLICIES",
                        help="OMP_WAIT_POLICY values (comma-separated): more than one runs a child process per "
                             "policy and round, alternated; default PASSIVE,ACTIVE, or OMP_WAIT_POLICY when set")
    parser.add_argument("--by-position", action="store_true",
                        help="also print each set-up's median by the step's position in its block (1st, 2nd, ...): "
                             "what the first steps after a block of another set-up cost")
    parser.add_argument("--json-times", action="store_true", help=argparse.SUPPRESS)  # a child's output
    parser.add_argument("--lazyscope-threads-via", choices=("gomp", "torch"), default="gomp",
                        help="how LazyScope's set-ups set OpenMP's thread count: libgomp's omp_set_num_threads "
                             "(default) or torch.set_num_threads, whose pool resizing spins beside the next block")
    args = parser.parse_args()
    policies = [p.strip().upper() for p in args.omp_policies.split(",") if p.strip()]
    if len(policies) > 1 or (policies and policies[0] != os.environ["OMP_WAIT_POLICY"]):
        return by_policy(args, policies)
    cores = os.cpu_count() or 1
    ours, torch_setups = setups_for(args, cores)
    if not args.json_times:
        print(f"torch {torch.__version__}, numpy {np.__version__}, {cores} cores, "
              f"LazyScope's OpenMP threads set via {args.lazyscope_threads_via}, "
              f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}, "
              f"OpenBLAS thread control: {'yes' if OPENBLAS is not None else 'NO (found no libopenblas)'}")
    all_times = {}
    for model in args.models.split(","):
        times = measure(args, model, ours + torch_setups)
        all_times[model] = times
        if not args.json_times:
            report(model, args.rounds, args.steps, {name: statistics.median(v) for name, v in times.items()},
                   [n for n, _, _ in ours], [n for n, _, _ in torch_setups], cores,
                   floor_times=times.get(FLOOR, ()),
                   per_round=lambda name: floor_per_round(times[name], times[FLOOR], args.steps))
            if args.by_position:
                by_position(times, args.steps)
    if args.json_times:
        print("JSON_TIMES " + json.dumps(all_times))


def setups_for(args, cores):
    """(LazyScope's set-ups, PyTorch's), each (name, OpenMP threads, OpenBLAS threads)."""
    thread_counts = sorted({1, min(2, cores)})
    # PyTorch's two-thread OpenMP set-ups last (see --omp-policies).
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
    return ours, torch_setups


def measure(args, model, setups):
    """{set-up: [ms per step]}: rounds of every set-up's block in turn (A B A B
    ...), each set-up created and warmed up right before its first block."""
    data = batches(model, np.random.default_rng(0))
    trainers = {}

    def use(name, omp, blas):
        set_threads(omp, blas, via_torch=not name.startswith("lazyscope") or args.lazyscope_threads_via == "torch")

    times = {name: [] for name, _, _ in setups}
    cores = os.cpu_count() or 1
    # The MLP's GEMM floor is a block of every round, alternated with the
    # steps (A B A B ...) like any set-up, after LazyScope's blocks and
    # before PyTorch's (whose two-thread OpenMP set-ups may leave a team
    # spinning under ACTIVE): the rate and the steps see the same load.
    floor_at = len([s for s in setups if s[0].startswith("lazyscope")]) if model == "mlp" else None
    if floor_at is not None:
        times[FLOOR] = []
    for _ in range(args.rounds):
        for i, (name, omp, blas) in enumerate(setups):  # A B A B ...
            if i == floor_at:
                time.sleep(args.settle)
                times[FLOOR].extend(sgemm_ms(cores))
            # OpenBLAS's threads spin in sched_yield for ~0.1 s (2^28
            # cycles) after their last product: a set-up following one
            # with blas=2 would share the cores with them. Each block
            # starts after they have gone to sleep.
            time.sleep(args.settle)
            use(name, omp, blas)
            if name not in trainers:
                trainers[name] = Trainer(model, name, data)
                for _ in range(args.warmup):
                    trainers[name].step()
            for _ in range(args.steps):
                t = time.perf_counter()
                trainers[name].step()
                times[name].append((time.perf_counter() - t) * 1e3)
    return times


def by_position(times, steps):
    """Each set-up's median ms by the step's position in its blocks (every
    block appends `steps` times in order)."""
    print(f"  by position in the block (1..{steps}), median ms:")
    for name, v in times.items():
        cols = [statistics.median(v[i::steps]) for i in range(steps)]
        print(f"  {name:34s} " + " ".join(f"{c:6.2f}" for c in cols))


def report(model, rounds, steps, med, ours, torch_names, cores, tag="", floor_times=(), per_round=None):
    """The medians, ratios to PyTorch's best and, for the MLP, to its GEMM
    floor: its FLOPs at the median SGEMM rate of `floor_times` (ms per
    1024^2 product, measured in every round). per_round(name): that set-up's
    per-round step medians over the same rounds' floor, when known."""
    best_torch = min(torch_names, key=med.get)
    print(f"\n{model}: median ms/step over {rounds} rounds x {steps} steps{tag}")
    for name in ours + torch_names:
        mark = "  <- PyTorch's best" if name == best_torch else ""
        print(f"  {name:34s} {med[name]:8.2f} ms{mark}")
    for name in ours:
        print(f"  {name} speed vs PyTorch's best: {med[best_torch] / med[name]:.2f}x")
    if model == "mlp" and floor_times:
        rate = gflops(statistics.median(floor_times))
        floor = mlp_gemm_flops() / (rate * 1e9) * 1e3
        print(f"  SGEMM (NumPy/OpenBLAS, 1024^2, {cores} threads, {FLOOR_CALLS} products in every round's block): "
              f"{rate:.1f} GFLOP/s (median; single products {gflops(max(floor_times)):.0f}-{gflops(min(floor_times)):.0f}); "
              f"GEMM floor of the step {floor:.2f} ms; lazy:0 / floor = {med[ours[0]] / floor:.2f}x; "
              f"PyTorch's best / floor = {med[best_torch] / floor:.2f}x")
        for name in ours[1:]:
            if " lazy:0 " in name:
                print(f"  {name.split('lazyscope ', 1)[1]} / floor = {med[name] / floor:.2f}x")
        if per_round:
            # Each round's lazy:0 median against that round's own floor:
            # the pairs saw the same load.
            pairs = per_round(ours[0])
            print(f"  lazy:0 / floor per round (its own rate): {', '.join(f'{r:.2f}' for r in pairs)}; "
                  f"median {statistics.median(pairs):.2f}x")


def by_policy(args, policies):
    """Every set-up under each OpenMP wait policy: a child process of this
    script per policy and round (one round each), policies alternated."""
    cores = os.cpu_count() or 1
    child_args = [a for a in sys.argv[1:]]
    for flag in ("--omp-policies", "--rounds"):  # the child's own: one round, its policy
        while flag in child_args:
            i = child_args.index(flag)
            del child_args[i:i + 2]
        child_args = [a for a in child_args if not a.startswith(flag + "=")]
    times = {}  # model -> "set-up [POLICY]" -> [ms]
    print(f"torch {torch.__version__}, {cores} cores, OMP_WAIT_POLICY per child process: {', '.join(policies)}; "
          f"{args.rounds} rounds, policies alternated")
    for r in range(args.rounds):
        for policy in policies:
            env = dict(os.environ, OMP_WAIT_POLICY=policy)
            out = subprocess.run([sys.executable, __file__, *child_args, "--rounds", "1", "--json-times"], env=env,
                                 capture_output=True, text=True)
            line = next((ln for ln in out.stdout.splitlines() if ln.startswith("JSON_TIMES ")), None)
            if out.returncode != 0 or line is None:
                sys.exit(f"child under OMP_WAIT_POLICY={policy} failed:\n{out.stderr[-2000:]}")
            for model, per_setup in json.loads(line[len("JSON_TIMES "):]).items():
                for name, v in per_setup.items():
                    times.setdefault(model, {}).setdefault(f"{name} [{policy}]", []).extend(v)
    ours, torch_setups = setups_for(args, cores)
    for model, per_setup in times.items():
        med = {name: statistics.median(v) for name, v in per_setup.items()}
        floors = {p: per_setup.get(f"{FLOOR} [{p}]", []) for p in policies}

        def per_round(name, per_setup=per_setup, floors=floors):
            # A set-up's rounds under a policy pair with the floor blocks of
            # the same children.
            return floor_per_round(per_setup[name], floors[name.rsplit("[", 1)[1].rstrip("]")], args.steps)

        report(model, args.rounds, args.steps, med, [f"{n} [{p}]" for n, _, _ in ours for p in policies],
               [f"{n} [{p}]" for n, _, _ in torch_setups for p in policies], cores,
               tag=", one child process per policy and round",
               floor_times=[t for p in policies for t in floors[p]], per_round=per_round)
        if args.by_position:
            by_position(per_setup, args.steps)


if __name__ == "__main__":
    main()
