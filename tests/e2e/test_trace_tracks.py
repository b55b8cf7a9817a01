"""End to end: the Chrome trace of a real run has every kind of event on its
own track (steps, compiles, executions, fallbacks, transfers) and counter
tracks for device memory and logged scalars, with the values the history
holds: each track checked against the SQLite tables it comes from."""
import collections
import json
import os
import sqlite3
import subprocess
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import lazyscope
    from lazyscope.core import lazy_model as lm
    device = lm.lazy_device()
    w = lazyscope.randn(64, 64).to(device)
    for step in range(4):
        x = lazyscope.randn(32, 64).to(device)
        y = x @ w
        positive = (y > 0).nonzero()
        loss = (y * y).mean()
        lazyscope.log("loss", loss)
        lm.mark_step()
        print(f"loss {loss.item():.6f}")
""")

TRACKS = {"steps": 1, "compiles": 2, "executions": 3, "fallbacks": 4, "transfers": 5}


def lazyscope(build_dir, history, *args):
    env = dict(os.environ, LAZYSCOPE_HISTORY=str(history))
    return subprocess.run([str(build_dir / "bin" / "lazyscope"), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=300)


def query(history, sql):
    with sqlite3.connect(history) as db:
        return db.execute(sql).fetchall()


@pytest.fixture
def trace(build_dir, tmp_path):
    history = tmp_path / "history.sqlite"
    script = tmp_path / "tracks.py"
    script.write_text(SCRIPT)
    run = lazyscope(build_dir, history, "run", "--name", "tracks", script)
    assert run.returncode == 0, run.stderr
    out = tmp_path / "trace.json"
    exported = lazyscope(build_dir, history, "export", "tracks", "--chrome-trace", out)
    assert exported.returncode == 0, exported.stderr
    return json.loads(out.read_text()), history


def spans(events, tid):
    return [e for e in events if e["ph"] == "X" and e["pid"] == 1 and e["tid"] == tid]


def counters(events, name):
    return [e for e in events if e["ph"] == "C" and e["name"] == name]


def test_each_kind_of_event_has_its_named_track(trace):
    data, history = trace
    events = data["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {tid: name for name, tid in TRACKS.items()}

    steps = spans(events, TRACKS["steps"])
    recorded = query(history, "SELECT step, end_ns - start_ns FROM steps ORDER BY step")
    assert [(s["args"]["step"], round(s["dur"] * 1000)) for s in steps] == recorded
    assert [s["name"] for s in steps] == [f"step {n}" for n in range(4)]

    compiles = spans(events, TRACKS["compiles"])
    assert len(compiles) == query(history, "SELECT COUNT(*) FROM compilations")[0][0] >= 1
    assert {c["cat"] for c in compiles} == {"compile"}
    assert all(c["args"]["reason_kind"].startswith("COMPILE_REASON_") for c in compiles)

    executions = spans(events, TRACKS["executions"])
    assert len(executions) == query(history, "SELECT COUNT(*) FROM executions")[0][0]
    assert sum(1 for e in executions if e["args"]["cause"] == "SYNC_CAUSE_MARK_STEP") == 4

    fallbacks = spans(events, TRACKS["fallbacks"])
    assert len(fallbacks) == 4 and all(f["name"].endswith("nonzero") for f in fallbacks)
    # Line 9 is the nonzero call: the script text starts with a blank line.
    assert all(f["args"]["source"].endswith("tracks.py:9") for f in fallbacks)

    transfers = spans(events, TRACKS["transfers"])
    stored = query(history, "SELECT to_device, bytes FROM transfers ORDER BY start_ns, id")
    assert sorted((t["name"] == "to device", t["args"]["bytes"]) for t in transfers) == sorted(
        (bool(d), b) for d, b in stored)
    assert {t["name"] for t in transfers} == {"to device", "to host"}


def test_memory_and_scalars_are_counter_tracks_with_the_recorded_values(trace):
    data, history = trace
    events = data["traceEvents"]

    memory = counters(events, "LiveDeviceBufferBytes")
    stored = query(history, "SELECT value FROM metric_snapshots WHERE name = 'LiveDeviceBufferBytes' ORDER BY id")
    assert stored and [c["args"]["bytes"] for c in memory] == [v for (v,) in stored]
    assert {c["cat"] for c in memory} == {"memory"}
    assert any(c["args"]["bytes"] > 0 for c in memory)  # w lives on the device for the whole run
    assert [c["ts"] for c in memory] == sorted(c["ts"] for c in memory)

    loss = counters(events, "loss")
    logged = [v for (v,) in query(history, "SELECT value FROM scalars WHERE name = 'loss' ORDER BY step")]
    assert len(loss) == 4 and [c["args"]["value"] for c in loss] == pytest.approx(logged)
    assert {c["cat"] for c in loss} == {"scalar"}
    # Each value sits at the end of its step on the time axis.
    step_ends = [s["ts"] + s["dur"] for s in spans(events, TRACKS["steps"])]
    assert [c["ts"] for c in loss] == pytest.approx(step_ends, abs=0.002)
