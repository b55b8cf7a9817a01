"""End to end: each example script in scripts/examples/ run under the runner,
then `lazyscope show last` read as a newcomer would: the diagnosis names the
problem the example demonstrates and the script line that causes it (and says
nothing alarming about the fixed versions). `compare` of the recompilation
demo and its fix shows fewer compiles and the step-time difference.

Lines are found in the scripts' text, not hard-coded, so the examples can be
reworded without breaking these tests."""
import ast
import json
import os
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("LAZYSCOPE_BUILD_DIR", ROOT / "build" / "release"))
EXAMPLES = ("recompile_demo", "recompile_fixed", "host_sync_demo", "host_sync_fixed", "mnist_mlp")


def lazyscope(build_dir, history, *args):
    env = dict(os.environ, LAZYSCOPE_HISTORY=str(history))
    return subprocess.run([str(build_dir / "bin" / "lazyscope"), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=300)


def ok(result):
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """Every example recorded once into one history, under its own name; the
    module's tests then only read it."""
    path = tmp_path_factory.mktemp("examples") / "history.sqlite"
    for name in EXAMPLES:
        ok(lazyscope(BUILD, path, "run", "--name", name, ROOT / "scripts/examples" / f"{name}.py"))
    return path


def line_of(repo_root, example, pattern):
    """The 1-based line of the example's first code line matching `pattern`
    (the module docstring, which describes the same calls, is skipped)."""
    source = (repo_root / "scripts/examples" / f"{example}.py").read_text()
    body = ast.parse(source).body
    has_docstring = body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    after = body[0].end_lineno if has_docstring else 0
    for number, line in enumerate(source.splitlines(), start=1):
        if number > after and re.search(pattern, line.split("#")[0]):
            return number
    return None


def show(build_dir, history, run):
    """`show RUN --json` and `show RUN` (text): the report and the text."""
    report = json.loads(ok(lazyscope(build_dir, history, "show", run, "--json")))
    assert report["summary"]["run"]["name"] == run
    assert report["summary"]["run"]["status"] == "RUN_STATUS_SUCCEEDED"
    return report, ok(lazyscope(build_dir, history, "show", run))


def findings(report, rule=None, severity=None):
    return [f for f in report.get("findings", [])
            if (rule is None or f["rule"] == rule) and (severity is None or f["severity"] == severity)]


def problems(report):
    """Findings that tell the user to change something (info ones do not)."""
    return [f for f in report.get("findings", []) if f["severity"] in ("SEVERITY_WARNING", "SEVERITY_CRITICAL")]


def at_line(found, example, line):
    return [f for f in found if f["source"]["file"].endswith(f"{example}.py") and f["source"]["line"] == line]


def test_recompile_demo_names_the_batch_dimension_and_the_line(build_dir, repo_root, history):
    report, text = show(build_dir, history, "recompile_demo")
    # The input is made where the batch is moved to the device.
    batch_line = line_of(repo_root, "recompile_demo", r"data\.to\(device\)")
    recompiles = at_line(findings(report, "recompilation"), "recompile_demo", batch_line)
    assert len(recompiles) == 1, report.get("findings")
    finding = recompiles[0]
    assert finding["severity"] in ("SEVERITY_WARNING", "SEVERITY_CRITICAL")
    assert "batch dimension (dim 0)" in finding["title"]
    assert f"recompile_demo.py:{batch_line}" in finding["title"]
    # 1000 samples in batches of 128: the shapes seen are 128 and the last 104.
    assert "[128, 1, 28, 28]" in finding["detail"] and "[104, 1, 28, 28]" in finding["detail"]
    assert "drop_last=True" in finding["fix"]
    assert int(finding["count"]) == 1  # the second epoch's last batch reuses the cached graph
    assert f"batch dimension (dim 0) took 2 values at recompile_demo.py:{batch_line}" in text
    assert "fix: use drop_last=True" in text


def test_recompile_fixed_has_no_recompilation(build_dir, history):
    report, text = show(build_dir, history, "recompile_fixed")
    assert findings(report, "recompilation") == []
    assert report["summary"]["compiles"] == "1"
    assert "nothing slows this run down" in text


def test_host_sync_demo_lists_each_sync_with_its_line_and_a_fix(build_dir, repo_root, history):
    report, text = show(build_dir, history, "host_sync_demo")
    item_line = line_of(repo_root, "host_sync_demo", r"loss\.item\(\)")
    item = at_line(findings(report, "host-sync"), "host_sync_demo", item_line)
    assert len(item) == 1 and item[0]["title"].startswith(f"item() at host_sync_demo.py:{item_line} in every step")
    assert item[0]["severity"] == "SEVERITY_WARNING" and "lazyscope.log" in item[0]["fix"]

    branch_line = line_of(repo_root, "host_sync_demo", r"^\s*if loss\b")
    branch = at_line(findings(report, "host-sync"), "host_sync_demo", branch_line)
    assert len(branch) == 1 and "bool() of a tensor in control flow" in branch[0]["title"]
    assert "where" in branch[0]["fix"]

    nonzero_line = line_of(repo_root, "host_sync_demo", r"\.nonzero\(\)")
    nonzero = at_line(findings(report, "cpu-fallback"), "host_sync_demo", nonzero_line)
    assert len(nonzero) == 1 and nonzero[0]["title"].startswith(f"nonzero runs on the CPU at host_sync_demo.py:{nonzero_line}")
    assert "data-dependent output shape" in nonzero[0]["fix"]

    for line in (item_line, branch_line, nonzero_line):
        assert f"host_sync_demo.py:{line}" in text
    # The momentum buffers' one-off compile is not a thing to fix.
    assert "the traced graph changes" not in text


def test_host_sync_demo_flags_the_boolean_mask_read(build_dir, repo_root, history):
    report, _ = show(build_dir, history, "host_sync_demo")
    mask_line = line_of(repo_root, "host_sync_demo", r"\w\[[^\]]*(mask|[<>]|==|!=)[^\]]*\]")
    assert mask_line is not None, "no boolean-mask indexing in host_sync_demo.py"
    masked = at_line(findings(report, "cpu-fallback"), "host_sync_demo", mask_line)
    assert len(masked) == 1 and "data-dependent output shape" in masked[0]["fix"]


@pytest.mark.parametrize("example", ["host_sync_fixed", "mnist_mlp"])
def test_clean_examples_have_no_warnings(build_dir, history, example):
    report, text = show(build_dir, history, example)
    assert problems(report) == [], [f["title"] for f in problems(report)]
    assert "[warning]" not in text and "[critical]" not in text
    # What remains is the optimizer's first-step state: said to be harmless.
    for finding in report.get("findings", []):
        assert "warm-up" in finding["title"] and finding["fix"].startswith("nothing to change")


def test_compare_recompile_demo_with_its_fix(build_dir, history):
    comparison = json.loads(ok(lazyscope(build_dir, history, "compare", "recompile_demo", "recompile_fixed", "--json")))
    metrics = {m["metric"]: m for m in comparison["metrics"]}
    assert metrics["compiles"]["a"] == 2 and metrics["compiles"]["b"] == 1 and metrics["compiles"]["delta"] == -1
    step = metrics["median_step_ms"]
    assert step["a"] > 0 and step["b"] > 0
    assert step["delta"] == pytest.approx(step["b"] - step["a"])
    # The shape recompile is the reason that went away; the first compile on
    # the same line of each script is paired, not listed as changed.
    reasons = [(r["kind"], r["source"]["line"], int(r.get("count_a", 0)), int(r.get("count_b", 0)))
               for r in comparison["reasons"]]
    assert len(reasons) == 1 and reasons[0][0] == "COMPILE_REASON_SHAPE" and reasons[0][2:] == (1, 0), reasons

    text = ok(lazyscope(build_dir, history, "compare", "recompile_demo", "recompile_fixed"))
    headline = next(line for line in text.splitlines() if line.startswith("B vs A:"))
    assert "1 fewer compile," in headline and "median step" in headline
    assert re.search(r"(faster|slower) by [0-9.]+ (ms|us), [+-]\d+%\)", headline), headline
    # Counts as integers; one compile fewer is better (the noise threshold of
    # times is checked in tests/storage/compare_test.cpp, without timing).
    assert re.search(r"^\s+compiles\s+2\s+1\s+-1  better$", text, re.M), text
    assert re.search(r"^\s+steps\s+16\s+14\s+-2$", text, re.M), text
    assert re.search(r"^\s+median_step_ms\s", text, re.M)
