"""softmax, log_softmax and logsumexp over rows holding masked (-inf) and
very negative values, against NumPy in float64, on every instruction set.

The float32 row functions (engine/backend/cpu/fusion_rows.inc:
shifted_clamped, exp_in_place, exp_fix_under) clamp a shifted value below
-87 before the vector expf, whose slow path such values took, then set its
exponential: 0, or for a value in [-104, -87) the denormal the scalar expf
gives. These cases pin each part: -inf lanes (a causal mask), values whose
exponential is a denormal (wrong if the fix-up is skipped: 0 instead), values
below -104 (exactly 0), NaN rows, all -inf rows, +inf; rows shorter than
two vectors (blocked), long rows, and softmax over a dim that is not the
last (the column function).

Each instruction set runs in a child process: LAZYSCOPE_CPU_ISA is read once
per process."""

import os
import subprocess
import sys

import numpy as np
import pytest

CHILD = r"""
import sys, numpy as np, lazyscope
x = np.load(sys.argv[1])
outs = {}
for dev in ("lazy:0", "cpu"):
    t = lazyscope.tensor(x, device=dev)
    outs[dev + " softmax"] = t.softmax(-1).numpy()
    outs[dev + " log_softmax"] = t.log_softmax(-1).numpy()
    outs[dev + " logsumexp"] = lazyscope.logsumexp(t, -1).numpy()
    # Over the rows' dim of the transpose: a softmax down columns.
    outs[dev + " softmax columns"] = lazyscope.tensor(np.ascontiguousarray(x.T), device=dev).softmax(0).numpy().T
np.savez(sys.argv[2], **outs)
"""

# Offsets from a row's max: normal results, results that are denormals
# (expf(-87.5) ~ 1e-38 down to expf(-103.9) ~ 1.4e-45), below -104 (0).
OFFSETS = [0.0, -1.0, -30.0, -86.9, -87.2, -87.5, -90.0, -95.0, -100.0, -103.5, -103.9, -104.5, -120.0]


def rows(n):
    rng = np.random.default_rng(n)
    out = []
    base = rng.standard_normal(n).astype(np.float32)
    causal = base.copy()
    causal[n // 3:] = -np.inf  # a causal row: the later half masked
    out.append(causal)
    for start in range(0, len(OFFSETS), max(1, n - 1)):  # the offsets, each beside a max of 3.0
        r = np.full(n, -np.inf, dtype=np.float32)
        r[0] = 3.0
        chunk = OFFSETS[start:start + n - 1]
        r[1:1 + len(chunk)] = 3.0 + np.float32(chunk)
        out.append(r)
    mixed = base.copy()
    mixed[::2] = -np.inf
    mixed[1] = mixed.max() - 95.0  # a denormal among masked lanes
    out.append(mixed)
    out.append(np.full(n, -np.inf, dtype=np.float32))  # all masked: NaN, as PyTorch
    nan_row = base.copy()
    nan_row[n // 2] = np.nan
    out.append(nan_row)
    inf_row = base.copy()
    inf_row[0] = np.inf
    out.append(inf_row)
    out.append(base * 10)
    return np.stack(out).astype(np.float32)


def reference(x):
    """IEEE in float64, as the kernels shift: by the max, or 0 when it is
    infinite; NaNs are ignored by the max and make the row's sum NaN."""
    x = x.astype(np.float64)
    with np.errstate(all="ignore"):
        m = np.nanmax(np.where(np.isnan(x), -np.inf, x), axis=-1, keepdims=True)
        shift = np.where(np.isinf(m), 0.0, m)
        e = np.exp(x - shift)
        s = e.sum(-1, keepdims=True)
        soft = e * (1.0 / s)
        log_soft = (x - shift) - np.log(s)
        lse = np.where(np.isinf(m[..., 0]), m[..., 0], m[..., 0] + np.log(s[..., 0]))
    return soft, log_soft, lse, np.abs(x - shift)


def run(build_dir, tmp_path, isa, x):
    np.save(tmp_path / "x.npy", x)
    env = dict(os.environ, PYTHONPATH=str(build_dir / "python"), LAZYSCOPE_CPU_ISA=isa)
    proc = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "x.npy"), str(tmp_path / "out.npz")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return dict(np.load(tmp_path / "out.npz"))


def assert_close(got, want, shifted, what):
    """Within float32's rounding where the result is normal: a few ulp, and
    the rounding of the shifted value x - max, which the exponential turns
    into a relative error of |x - max| * 2^-24; within 3e-45 (two denormal
    steps) where it is a denormal; NaN where the reference is NaN."""
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan), f"{what}: NaN pattern differs"
    ok = ~nan
    err = np.abs(got[ok].astype(np.float64) - want[ok])
    with np.errstate(invalid="ignore"):
        rel = 1e-6 + 2 * 6e-8 * np.nan_to_num(shifted[ok], posinf=0.0)
    bound = rel * np.abs(want[ok]) + 3e-45
    assert np.all(err <= bound), (what, want[ok][err > bound][:5], got[ok][err > bound][:5])


@pytest.mark.parametrize("isa", ["x86-64", "avx2", "avx512f"])
@pytest.mark.parametrize("n", [10, 64, 300])
def test_masked_and_very_negative_rows_match_float64(isa, n, build_dir, tmp_path):
    x = rows(n)
    soft, log_soft, lse, shifted = reference(x)
    outs = run(build_dir, tmp_path, isa, x)
    # Denormal results not at the edge of rounding to 0 (those under ~1e-45
    # may round either way).
    denormal = (soft > 3e-45) & (soft < np.finfo(np.float32).tiny)
    assert denormal.sum() >= 3  # the cases reach the fix-up
    for dev in ("lazy:0", "cpu"):
        for kind in ("softmax", "softmax columns"):
            got = outs[f"{dev} {kind}"]
            assert_close(got, soft, shifted, f"{isa} n={n} {dev} {kind}")
            # The denormal results are there, not flushed to 0.
            assert np.all(got[denormal] > 0), f"{isa} n={n} {dev} {kind}: denormal results lost"
            assert np.all(got[np.isneginf(x) & ~np.isnan(soft)] == 0)
        np.testing.assert_allclose(outs[f"{dev} log_softmax"], log_soft, rtol=1e-6, atol=2e-6,
                                   err_msg=f"{isa} n={n} {dev} log_softmax")
        np.testing.assert_allclose(outs[f"{dev} logsumexp"], lse, rtol=1e-6, atol=1e-6,
                                   err_msg=f"{isa} n={n} {dev} logsumexp")
