"""End to end: `lazyscope export RUN --chrome-trace FILE` on a real run,
validated as Chrome trace-event JSON with Python's json module."""
import collections
import json
import os
import subprocess
import textwrap

# The batch size changes, so steps 0 and 2-5 compile; item() syncs inside every step.
RECOMPILING_SCRIPT = textwrap.dedent("""
    import lazyscope
    from lazyscope.core import lazy_model as lm
    w = lazyscope.randn(3, 1, device='lazy:0')
    for batch in [8, 8, 4, 8, 6, 4]:
        x = lazyscope.randn(batch, 3, device='lazy:0')
        loss = (x @ w).sum()
        lm.mark_step()
        seen = (x * 2.0).sum()
        seen.item()
""")

REQUIRED_KEYS = {
    "X": {"name", "cat", "ph", "pid", "tid", "ts", "dur", "args"},
    "C": {"name", "ph", "pid", "ts", "args"},
    "M": {"name", "ph", "pid", "args"},
}


def lazyscope(build_dir, history, *args):
    env = dict(os.environ, LAZYSCOPE_HISTORY=str(history))
    return subprocess.run([str(build_dir / "bin" / "lazyscope"), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=300)


def test_export_writes_a_valid_chrome_trace(build_dir, tmp_path):
    history = tmp_path / "history.sqlite"
    script = tmp_path / "shapes.py"
    script.write_text(RECOMPILING_SCRIPT)
    assert lazyscope(build_dir, history, "run", script).returncode == 0
    trace_file = tmp_path / "trace.json"
    result = lazyscope(build_dir, history, "export", "shapes", "--chrome-trace", trace_file)
    assert result.returncode == 0, result.stderr
    assert str(trace_file) in result.stdout

    trace = json.loads(trace_file.read_text())
    # The count it reports is what the file holds.
    assert f"wrote {len(trace['traceEvents'])} trace events" in result.stdout
    assert trace["otherData"]["run_name"] == "shapes"
    events = trace["traceEvents"]
    for event in events:
        assert event["ph"] in REQUIRED_KEYS, event
        assert REQUIRED_KEYS[event["ph"]] <= event.keys(), event
    metadata = [e for e in events if e["ph"] == "M"]
    timed = [e for e in events if e["ph"] != "M"]
    # Metadata first; one process, named, with a named thread per kind seen.
    assert events[:len(metadata)] == metadata
    assert {(e["pid"], e["args"]["name"]) for e in metadata if e["name"] == "process_name"} == {(1, "replica 0")}
    thread_names = {e["tid"]: e["args"]["name"] for e in metadata if e["name"] == "thread_name"}
    assert thread_names == {1: "steps", 2: "compiles", 3: "executions", 5: "transfers", 6: "host waits (syncs)"}

    by_thread = collections.defaultdict(list)
    for event in timed:
        assert event["ts"] >= 0
        assert event["ph"] == "C" or event["dur"] >= 0  # counters (memory) are instants
        by_thread[(event["pid"], event["tid"])].append(event)
    for thread_events in by_thread.values():
        stamps = [e["ts"] for e in thread_events]
        assert stamps == sorted(stamps)
    assert min(e["ts"] for e in timed) == 0  # relative to the run's first event

    steps = by_thread[(1, 1)]
    compiles = by_thread[(1, 2)]
    assert [e["name"] for e in steps] == [f"step {i}" for i in range(6)]
    assert [e["args"]["step"] for e in compiles] == [0, 1, 2, 3, 4, 5]
    assert [e["args"]["reason_kind"] for e in compiles] == (
        ["COMPILE_REASON_FIRST_SIGHT"] * 2 + ["COMPILE_REASON_SHAPE"] * 4)
    first_step = min(s["ts"] for s in steps)
    for compile in compiles:
        inside = any(s["ts"] <= compile["ts"] and compile["ts"] + compile["dur"] <= s["ts"] + s["dur"] + 0.001
                     for s in steps)
        assert inside or compile["ts"] + compile["dur"] <= first_step, compile
    executions = by_thread[(1, 3)]
    assert len(executions) == 12
    assert sum(e["args"]["cache_hit"] for e in executions) == 6
    # Each item() is a host wait; those inside steps (0-4: the sixth comes
    # after the last barrier) show in the steps' breakdown too.
    waits = by_thread[(1, 6)]
    assert [w["args"]["cause"] for w in waits] == ["item"] * 6
    for wait, step in zip(waits[:5], steps[1:]):
        assert wait["args"]["step"] == step["args"]["step"]
    assert sum(s["args"]["host_wait_us"] for s in steps) == sum(w["args"]["host_wait_us"] for w in waits[:5])


def test_export_needs_a_file_and_a_known_run(build_dir, tmp_path):
    history = tmp_path / "history.sqlite"
    script = tmp_path / "empty.py"
    script.write_text("pass\n")
    assert lazyscope(build_dir, history, "run", script).returncode == 0
    missing_flag = lazyscope(build_dir, history, "export", "last")
    assert missing_flag.returncode == 2 and "--chrome-trace" in missing_flag.stderr
    missing_run = lazyscope(build_dir, history, "export", "nosuchrun", "--chrome-trace", tmp_path / "t.json")
    assert missing_run.returncode == 1 and "nosuchrun" in missing_run.stderr
    out = tmp_path / "empty.json"
    assert lazyscope(build_dir, history, "export", "last", "--chrome-trace", out).returncode == 0
    assert json.loads(out.read_text())["traceEvents"] == []


def show_json(build_dir, history, ref, *extra):
    result = lazyscope(build_dir, history, "show", ref, "--json", *extra)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def without_id(report):
    report["summary"]["run"].pop("id")
    return report


def test_bundle_export_then_import_into_a_fresh_history(build_dir, tmp_path):
    source = tmp_path / "source.sqlite"
    script = tmp_path / "shapes.py"
    script.write_text(RECOMPILING_SCRIPT + "print('done')\n")
    assert lazyscope(build_dir, source, "run", script, "--tag", "t", "--quiet").returncode == 0
    bundle = tmp_path / "shapes.lsrun"
    result = lazyscope(build_dir, source, "export", "shapes", "--bundle", bundle)
    assert result.returncode == 0, result.stderr
    assert str(bundle) in result.stdout

    target = tmp_path / "target.sqlite"
    result = lazyscope(build_dir, target, "import", bundle)
    assert result.returncode == 0, result.stderr
    assert 'imported run "shapes" as run #1' in result.stdout
    assert without_id(show_json(build_dir, source, "shapes")) == without_id(show_json(build_dir, target, "shapes"))
    assert show_json(build_dir, source, "shapes", "--output") == show_json(build_dir, target, "shapes", "--output")
    graphs = lazyscope(build_dir, source, "graphs", "shapes", "--json").stdout
    assert graphs == lazyscope(build_dir, target, "graphs", "shapes", "--json").stdout

    # Again into the same history: a new run with a clear new name.
    result = lazyscope(build_dir, target, "import", bundle)
    assert result.returncode == 0, result.stderr
    assert '"shapes (imported)"' in result.stdout and "already" in result.stdout
    assert show_json(build_dir, target, "shapes (imported)")["summary"]["run"]["id"] == "2"


def test_import_refuses_truncated_and_garbage_files_leaving_the_history_alone(build_dir, tmp_path):
    source = tmp_path / "source.sqlite"
    script = tmp_path / "shapes.py"
    script.write_text(RECOMPILING_SCRIPT)
    assert lazyscope(build_dir, source, "run", script, "--quiet").returncode == 0
    bundle = tmp_path / "shapes.lsrun"
    assert lazyscope(build_dir, source, "export", "last", "--bundle", bundle).returncode == 0
    data = bundle.read_bytes()
    target = tmp_path / "target.sqlite"
    assert lazyscope(build_dir, target, "run", script, "--name", "mine", "--quiet").returncode == 0
    before = lazyscope(build_dir, target, "runs", "--json").stdout

    bad = tmp_path / "bad.lsrun"
    for content, message in [(data[: len(data) // 2], "truncated"), (data[:-3], "truncated"),
                             (b"\x00garbage" * 50, "not a LazyScope run bundle"), (b"", "empty")]:
        bad.write_bytes(content)
        result = lazyscope(build_dir, target, "import", bad)
        assert result.returncode == 1, result.stdout
        assert str(bad) in result.stderr and message in result.stderr, result.stderr
    assert lazyscope(build_dir, target, "runs", "--json").stdout == before
