"""Where a cached lazy training step spends its time outside its kernels.

Runs a step on `lazy:0` phase by phase and prints the median of each phase
(issue 11: the per-step cost of tracing, autograd, the optimizer and the
executor, beside the kernels). Two programs:

  - mlp: the MLP of benchmarks/vs_pytorch.py (784-512-256-10, batch 128,
    cross-entropy, SGD with momentum, optimizer_step with a barrier, one
    loss.item() per step);
  - cnn: the MNIST CNN of benchmarks/vs_pytorch.py (two 5x5 convolutions,
    2x2 max-pooling, dropout, batch 64, nll_loss, the same optimizer);
  - upload: only the upload of a fresh MNIST batch ([64, 1, 28, 28] float32,
    ten arrays in turn), dropped at once: what a data-loading loop does;
  - chain: 1,000 elementwise ops on a [64] tensor traced from Python
    (relu(x + x), 500 times): the per-op cost of the Python front end.

Phases, timed around each call from Python: upload (the batch to the
device), forward, backward, optimizer (zero_grad + step: tracing only),
sync (the barrier), read (loss.item(): a transfer, the graph has run). The
sync is split by the executor itself (`_C._last_sync_profile`): collect,
lower (walk + graph hash), lookup (compile cache), bind (parameters in,
results out, the traced graph released), execute, and within execute the
kernels (the executable's profile: this benchmark sets
LAZYSCOPE_PROFILE_EVERY=1, so every execution is timed kernel by kernel and
the program's own overhead is each execution's run minus its kernels).

"Outside the program" (the step minus the executable's run) is what this
benchmark is about; the program's own overhead beyond its kernels belongs
to the backend.

The reference, measured side by side in the same run (set-ups alternate
round by round, A B A B ...), is the same step on the eager `cpu` device:
the ratio is lazy / eager (below 1: the lazy step is faster).

    LAZYSCOPE_BUILD_DIR=$PWD/build/release /usr/bin/python3 benchmarks/step_overhead.py [--rounds 7 --steps 20]

With --foreach-ab (mlp, cnn), the lazy step against itself: the
optimizer's update (SGD with momentum, or Adam with --optimizer adam)
traced by one C++ call per parameter group (the default) or by the
per-parameter Python loop (foreach=False), alternated round by round.
"""
import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

# Every execution times its kernels (a clock read per kernel, ~0.5 us of an
# MLP step), so each step's run splits into its kernels and the program's
# own overhead on the same execution; the engine's default samples every 64th.
os.environ.setdefault("LAZYSCOPE_PROFILE_EVERY", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(os.environ.get("LAZYSCOPE_BUILD_DIR", ROOT / "build" / "release")) / "python"))

import lazyscope  # noqa: E402
from lazyscope import _C, nn  # noqa: E402
from lazyscope.core import lazy_model as lm  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_models import make_cnn, make_mlp  # noqa: E402  (vs_pytorch.py's models)

F = nn.functional
PHASES = ("upload", "forward", "backward", "optimizer", "sync", "read")
SYNC_PHASES = ("collect", "lower", "lookup", "bind_inputs", "execute", "bind_outputs", "publish")


def make_optimizer(name, params, options):
    """SGD with momentum (the benchmarks' default) or Adam, with `options` (foreach)."""
    if name == "adam":
        return lazyscope.optim.Adam(params, lr=1e-3, **options)
    return lazyscope.optim.SGD(params, lr=0.01, momentum=0.9, **options)


class Step:
    """One program on one device; run() does a step and returns its phase times (s)."""

    def __init__(self, program, device, foreach=None, optimizer="sgd"):
        self.program, self.lazy = program, device != "cpu"
        self.last_profile = None
        self.with_kernels = True  # read after the step's timed phases
        self.device = lm.lazy_device() if self.lazy else "cpu"
        sgd = {} if foreach is None else {"foreach": foreach}  # builds before foreach existed take no such argument
        rng = np.random.default_rng(0)
        lazyscope.manual_seed(0)
        if program == "mlp":
            self.net = make_mlp(nn, F).to(self.device)
            self.opt = make_optimizer(optimizer, self.net.parameters(), sgd)
            self.x = rng.standard_normal((128, 784), dtype=np.float32)
            self.y = rng.integers(0, 10, 128)
        elif program == "cnn":
            self.net = make_cnn(nn, F).to(self.device)
            self.opt = make_optimizer(optimizer, self.net.parameters(), sgd)
            self.x = rng.standard_normal((64, 1, 28, 28), dtype=np.float32)
            self.y = rng.integers(0, 10, 64)
        elif program == "upload":
            self.batches = [rng.standard_normal((64, 1, 28, 28), dtype=np.float32) for _ in range(10)]
            self.i = 0
        else:
            self.x = lazyscope.tensor(np.full(64, 1e-3, dtype=np.float32), device=self.device)

    def run(self):
        if self.program == "upload":
            self.i += 1
            t0 = time.perf_counter()
            lazyscope.tensor(self.batches[self.i % 10], device=self.device)
            self.last_profile = None
            return [time.perf_counter() - t0, 0.0, 0.0, 0.0, 0.0, 0.0]
        if self.program == "chain":
            t0 = time.perf_counter()
            x = self.x
            for _ in range(500):
                x = (x + x).relu()
            t1 = time.perf_counter()
            if self.lazy:
                lm.mark_step()
            t2 = time.perf_counter()
            self.last_profile = self.sync_profile()  # before the read's own small sync; not timed
            t3 = time.perf_counter()
            x.sum().item()
            t4 = time.perf_counter()
            return [0.0, t1 - t0, 0.0, 0.0, t2 - t1, t4 - t3]  # the chain is the "forward"
        t = [time.perf_counter()]
        x, y = lazyscope.tensor(self.x, device=self.device), lazyscope.tensor(self.y, device=self.device)
        t.append(time.perf_counter())
        loss = F.nll_loss(self.net(x), y) if self.program == "cnn" else F.cross_entropy(self.net(x), y)
        t.append(time.perf_counter())
        loss.backward()
        t.append(time.perf_counter())
        self.opt.step()
        self.opt.zero_grad()
        t.append(time.perf_counter())
        if self.lazy:
            lm.mark_step()
        t.append(time.perf_counter())
        self.last_profile = self.sync_profile()  # not timed
        t.append(time.perf_counter())
        loss.item()
        t.append(time.perf_counter())
        phases = [b - a for a, b in zip(t, t[1:])]
        del phases[5]  # the profile read between the sync and the read
        return phases

    def kernel_totals(self):
        """The cumulative kernel time of the barrier's graph, read after one more step's barrier
        (the read costs microseconds, outside the step's timed phases)."""
        if not hasattr(_C, "_last_sync_profile"):
            return {"nodes": "?", "kernel_samples": 0, "kernel_total_ns": 0}
        self.run()
        return self.last_profile or {"nodes": "?", "kernel_samples": 0, "kernel_total_ns": 0}  # upload: no graph

    def sync_profile(self):
        # Builds before the executor's profile existed have no split of the sync.
        if not hasattr(_C, "_last_sync_profile"):
            return None
        return _C._last_sync_profile(_C.device(str(self.device)), with_kernels=self.with_kernels)


def us(seconds):
    return seconds * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", default="mlp,chain")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=20, help="steps per set-up and round")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--foreach-ab", action="store_true",
                        help="instead: the lazy step with SGD's foreach update (one C++ call per parameter group) "
                             "against its per-parameter Python loop (foreach=False), alternated round by round")
    parser.add_argument("--optimizer", choices=("sgd", "adam"), default="sgd",
                        help="the optimizer of --foreach-ab (default: SGD with momentum)")
    args = parser.parse_args()
    if args.foreach_ab:
        return foreach_ab(args)
    for program in args.programs.split(","):
        lazy, eager = Step(program, "lazy:0"), Step(program, "cpu")
        for _ in range(args.warmup):
            lazy.run()
            eager.run()
        phases = {p: [] for p in PHASES}
        sync = {p: [] for p in SYNC_PHASES}
        executor = []  # per step: the sync outside the executable's run
        totals = {"lazy": [], "eager": []}
        before = lazy.kernel_totals()
        faults = []  # minor page faults per lazy step: fresh memory touched (load-immune)
        own = []  # per sampled execution: its run minus its kernels' time
        last = before
        for _ in range(args.rounds):  # A B A B ...
            for _ in range(args.steps):
                flt = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                times = lazy.run()
                faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - flt)
                totals["lazy"].append(sum(times))
                for p, v in zip(PHASES, times):
                    phases[p].append(v)
                prof = lazy.last_profile
                for p in SYNC_PHASES:
                    sync[p].append(prof[p + "_ns"] / 1e9 if prof else float("nan"))
                executor.append((prof["total_ns"] - prof["execute_ns"]) / 1e9 if prof else float("nan"))
                if prof and last and prof.get("kernel_samples", 0) == last.get("kernel_samples", 0) + 1:
                    kernels_now = prof["kernel_total_ns"] - last["kernel_total_ns"]
                    if kernels_now > 0:  # not a profile restarted (a kernel switched to compiled code)
                        own.append((prof["execute_ns"] - kernels_now) / 1e9)
                last = prof
            for _ in range(args.steps):
                totals["eager"].append(sum(eager.run()))
        after = lazy.kernel_totals()
        samples = after["kernel_samples"] - before["kernel_samples"]
        kernels = (after["kernel_total_ns"] - before["kernel_total_ns"]) / 1e9 / samples if samples else float("nan")
        med = {p: statistics.median(v) for p, v in phases.items()}
        smed = {p: statistics.median(v) for p, v in sync.items()}
        lazy_step, eager_step = statistics.median(totals["lazy"]), statistics.median(totals["eager"])
        print(f"\n{program}: median us per step, {args.rounds} rounds x {args.steps} steps, "
              f"{after['nodes']} graph nodes")
        print(f"  lazy:0 step        {us(lazy_step):9.1f}")
        for p in PHASES:
            print(f"    {p:16s} {us(med[p]):9.1f}")
            if p == "sync":
                for q in SYNC_PHASES:
                    print(f"      {q:14s} {us(smed[q]):9.1f}")
                print(f"        kernels      {us(kernels):9.1f}  (sampled: {samples} executions)")
        # The executable's run (kernels and the program's own dispatch) is
        # measured every step; its kernels only on the sampled executions.
        outside = lazy_step - smed["execute"]
        print(f"  outside the program {us(outside):8.1f}  ({outside / lazy_step:.0%} of the step: tracing, autograd, "
              f"optimizer, executor, transfers)")
        print(f"  executor overhead  {us(statistics.median(executor)):9.1f}  (the barrier outside its program)")
        if own:
            print(f"  program overhead   {us(statistics.median(own)):9.1f}  (each sampled execution minus its own "
                  f"kernels' time, median of {len(own)})")
        else:
            print(f"  program overhead   {us(smed['execute'] - kernels):9.1f}  (execute minus sampled kernels: noisy "
                  f"with few samples)")
        print(f"  page faults        {statistics.median(faults):9.1f}  (minor, per lazy step: fresh pages touched)")
        print(f"  cpu (eager) step   {us(eager_step):9.1f}")
        print(f"  lazy / eager       {lazy_step / eager_step:9.2f}x  (below 1: lazy is faster)")


def foreach_ab(args):
    """The same lazy step, optimizer update traced by one C++ call per group
    (_C._sgd_step or _C._adam_step: A) or by _update per parameter (B), A B A B ...: medians of the step, of its
    optimizer phase and of the step outside the executable's run."""
    for program in args.programs.split(","):
        if program not in ("mlp", "cnn"):
            continue
        setups = {"foreach": Step(program, "lazy:0", optimizer=args.optimizer),
                  "loop": Step(program, "lazy:0", foreach=False, optimizer=args.optimizer)}
        for _ in range(args.warmup):
            for s in setups.values():
                s.run()
        step = {k: [] for k in setups}
        opt = {k: [] for k in setups}
        outside = {k: [] for k in setups}
        for _ in range(args.rounds):
            for name, s in setups.items():
                for _ in range(args.steps):
                    times = s.run()
                    step[name].append(sum(times))
                    opt[name].append(times[PHASES.index("optimizer")])
                    prof = s.last_profile
                    outside[name].append(sum(times) - (prof["execute_ns"] / 1e9 if prof else float("nan")))
        print(f"\n{program} ({args.optimizer}): median us per step, {args.rounds} rounds x {args.steps} steps, "
              "alternated")
        print(f"  {'':22s} {'foreach':>9s} {'loop':>9s} {'ratio':>7s}")
        for label, values in (("step", step), ("optimizer (trace)", opt), ("outside the program", outside)):
            a, b = statistics.median(values["foreach"]), statistics.median(values["loop"])
            print(f"  {label:22s} {us(a):9.1f} {us(b):9.1f} {a / b:7.2f}x")


if __name__ == "__main__":
    main()
