"""End to end: the percentiles of a timed metric, as `lazyscope show --json`
prints them (the engine's snapshot, recorded by storage; the GUI's Metrics
view shows the same values), are NumPy's default percentiles (linear
interpolation) of the samples the run recorded: p50 of two compiles of 24 and
33 us is 28.5 us, not 33."""
import json
import os
import subprocess
import textwrap

import numpy as np
import pytest

SCRIPT = textwrap.dedent("""
    import lazyscope
    from lazyscope.core import lazy_model as lm
    kept = []
    for n in {sizes}:
        x = lazyscope.randn(n, 3, device='lazy:0')
        kept.append((x * 2.0).sum())
        lm.mark_step()
""")


@pytest.mark.parametrize("sizes", [[2, 3], [2, 3, 4, 5, 6, 7, 9]])
def test_compile_time_percentiles_are_numpys(build_dir, tmp_path, sizes):
    script = tmp_path / "compiles.py"
    script.write_text(SCRIPT.format(sizes=sizes))
    history = tmp_path / "h.sqlite"
    env = dict(os.environ, LAZYSCOPE_HISTORY=str(history))
    lazyscope = str(build_dir / "bin" / "lazyscope")
    run = subprocess.run([lazyscope, "run", "--quiet", str(script)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    shown = subprocess.run([lazyscope, "show", "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    # Every shape compiles once: each compile's duration is one CompileTime sample.
    durations_ms = [int(c["duration_ns"]) / 1e6 for c in report["compiles"]]
    assert len(durations_ms) == len(sizes)
    (compile_time,) = [m for m in report["metrics"]["metrics"] if m["name"] == "CompileTime"]
    assert int(compile_time["count"]) == len(sizes)
    expected = np.percentile(durations_ms, [50, 90, 99])
    got = [compile_time["p50_ms"], compile_time["p90_ms"], compile_time["p99_ms"]]
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
    if len(sizes) == 2:
        # The median of two is between them, not the larger one.
        assert min(durations_ms) <= got[0] <= max(durations_ms)
        assert got[0] == pytest.approx(sum(durations_ms) / 2, rel=1e-9)
