"""End to end: the history commands (runs, show, compare, graphs, graph, tag,
rename, delete) on real runs of the engine, checked against their JSON and
against the SQLite file itself."""
import json
import os
import sqlite3
import subprocess
import textwrap

import pytest

SUCCEEDED = 2

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


def lazyscope(build_dir, history, *args):
    env = dict(os.environ, LAZYSCOPE_HISTORY=str(history))
    return subprocess.run([str(build_dir / "bin" / "lazyscope"), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=300)


def ok(result):
    assert result.returncode == 0, result.stderr
    return result.stdout


def query(history, sql, *params):
    with sqlite3.connect(history) as db:
        return db.execute(sql, params).fetchall()


@pytest.fixture
def history(build_dir, repo_root, tmp_path):
    """Three runs: linear regression with 10 and 5 steps, and a script whose
    batch size changes and which reads a value inside every step."""
    path = tmp_path / "history.sqlite"
    example = repo_root / "scripts/examples/linear_regression.py"
    ok(lazyscope(build_dir, path, "run", "--name", "lr10", "--tag", "baseline", example, "--", "--steps", 10))
    ok(lazyscope(build_dir, path, "run", "--name", "lr5", example, "--", "--steps", 5, "--lr", 0.05))
    script = tmp_path / "recompile.py"
    script.write_text(RECOMPILING_SCRIPT)
    ok(lazyscope(build_dir, path, "run", "--name", "shapes", script))
    return path


def test_runs_lists_and_filters(build_dir, history):
    runs = json.loads(ok(lazyscope(build_dir, history, "runs", "--json")))["runs"]
    assert [r["run"]["name"] for r in runs] == ["shapes", "lr5", "lr10"]
    assert [int(r["steps"]) for r in runs] == [6, 5, 10]
    assert [r["run"]["status"] for r in runs] == ["RUN_STATUS_SUCCEEDED"] * 3

    def names(*filters):
        return [r["run"]["name"] for r in json.loads(ok(lazyscope(build_dir, history, "runs", "--json", *filters)))["runs"]]

    assert names("--name", "lr") == ["lr5", "lr10"]
    assert names("--name", "recompile.py") == ["shapes"]  # the script path matches too
    assert names("--tag", "baseline") == ["lr10"]
    assert names("--status", "failed") == []
    assert names("--since", "1d") == ["shapes", "lr5", "lr10"]
    assert names("--since", "2000-01-01") == ["shapes", "lr5", "lr10"]
    text = ok(lazyscope(build_dir, history, "runs", "--status", "succeeded"))
    assert "lr10" in text and "shapes" in text
    bad = lazyscope(build_dir, history, "runs", "--status", "happy")
    assert bad.returncode == 2 and "--status must be" in bad.stderr


def test_show_reports_summary_diagnosis_and_compiles(build_dir, history):
    report = json.loads(ok(lazyscope(build_dir, history, "show", "shapes", "--json")))
    assert report["summary"]["run"]["name"] == "shapes"
    assert int(report["summary"]["compiles"]) == 6
    recompiles = [f for f in report["findings"] if f["rule"] == "recompilation"]
    assert len(recompiles) == 2
    [shapes_at_mark_step] = [f for f in recompiles if "compiled at recompile.py:8" in f["detail"]]
    [shapes_at_item] = [f for f in recompiles if "compiled at recompile.py:10" in f["detail"]]
    # x is created on line 6 of the script, mark_step() is line 8, item() line 10;
    # batch sizes 8, 4, 6. The title names the line that made the input.
    assert shapes_at_mark_step["title"].startswith("input 0 shape: the batch dimension (dim 0) took 3 values at recompile.py:6")
    assert shapes_at_mark_step["source"]["line"] == 6
    assert "[8, 3], [4, 3], [6, 3]" in shapes_at_mark_step["detail"]
    assert int(shapes_at_mark_step["count"]) == 2
    assert "drop_last=True" in shapes_at_mark_step["fix"]
    assert shapes_at_item["source"]["line"] == 6
    [sync] = [f for f in report["findings"] if f["rule"] == "host-sync"]
    assert sync["title"].startswith("item() at recompile.py:10 in")
    assert sync["source"]["line"] == 10
    assert int(sync["count"]) == 5  # steps 1-5; the item() after the last mark_step is outside any step
    assert [c["reason_kind"] for c in report["compiles"]] == (
        ["COMPILE_REASON_FIRST_SIGHT"] * 2 + ["COMPILE_REASON_SHAPE"] * 4)
    assert all("graph" not in c or not c["graph"].get("nodes") for c in report["compiles"])

    text = ok(lazyscope(build_dir, history, "show", "shapes"))
    assert 'run #3 "shapes" succeeded' in text
    assert "diagnosis:" in text and "fix: use drop_last=True" in text
    assert "input 0 (recompile.py:6) shape [8, 3] -> [4, 3]" in text
    # The linear regression is clean.
    clean = ok(lazyscope(build_dir, history, "show", "lr10"))
    assert "diagnosis: nothing slows this run down" in clean


def test_runs_are_named_by_id_name_or_last_with_clear_errors(build_dir, history):
    def shown_name(ref):
        return json.loads(ok(lazyscope(build_dir, history, "show", ref, "--json")))["summary"]["run"]["name"]

    assert shown_name("1") == "lr10"
    assert shown_name("lr5") == "lr5"
    assert shown_name("last") == "shapes"
    missing = lazyscope(build_dir, history, "show", "nosuchrun")
    assert missing.returncode == 1
    assert "no run with id or name 'nosuchrun'" in missing.stderr and str(history) in missing.stderr
    assert lazyscope(build_dir, history, "graphs", "42").returncode == 1


def test_compare_matches_graphs_by_structure(build_dir, history):
    comparison = json.loads(ok(lazyscope(build_dir, history, "compare", "lr10", "lr5", "--json")))
    metrics = {m["metric"]: m for m in comparison["metrics"]}
    assert (metrics["steps"]["a"], metrics["steps"]["b"], metrics["steps"]["delta"]) == (10, 5, -5)
    assert metrics["compiles"]["delta"] == 0
    assert metrics["cache_hit_rate"]["a"] == pytest.approx(0.9)
    assert metrics["cache_hit_rate"]["b"] == pytest.approx(0.8)
    # Same script, another learning rate: the same graph (the rate is an input).
    assert len(comparison["both"]) == 1 and comparison["only_a"] == [] and comparison["only_b"] == []
    [shared] = comparison["both"]
    assert int(shared["executions_delta"]) == -5
    assert comparison["reasons"] == []

    other = json.loads(ok(lazyscope(build_dir, history, "compare", "lr10", "shapes", "--json")))
    assert len(other["only_a"]) == 1 and len(other["only_b"]) == 6 and other["both"] == []
    shape_reasons = [r for r in other["reasons"] if r["kind"] == "COMPILE_REASON_SHAPE"]
    assert sorted(int(r["count_b"]) for r in shape_reasons) == [2, 2]

    text = ok(lazyscope(build_dir, history, "compare", "1", "2"))
    assert "graphs in both: 1" in text and "B - A" in text
    # Counts are integers, and fewer steps is not "better": it is less work.
    [steps_line] = [line for line in text.splitlines() if line.split()[:1] == ["steps"]]
    assert steps_line.split() == ["steps", "10", "5", "-5"]
    assert metrics["steps"]["verdict"] == 0 and metrics["steps"]["is_count"]
    assert metrics["cache_hit_rate"]["verdict"] == -1  # 0.9 -> 0.8


def test_history_commands_name_columns_and_hashes_alike(build_dir, history):
    runs = ok(lazyscope(build_dir, history, "runs")).splitlines()
    assert runs[0].split() == ["id", "name", "status", "started", "steps", "compiles", "duration"]
    # graphs without RUN is the last run, as show is.
    last = json.loads(ok(lazyscope(build_dir, history, "show", "--json")))["summary"]["run"]["id"]
    assert ok(lazyscope(build_dir, history, "graphs")) == ok(lazyscope(build_dir, history, "graphs", str(last)))
    # Hashes are the same 16 hex digits in the text, in --json and in `graph`.
    report = json.loads(ok(lazyscope(build_dir, history, "show", "shapes", "--json")))
    hashes = {c["graph_hash"] for c in report["compiles"]}
    assert all(len(h) == 16 and int(h, 16) >= 0 for h in hashes)
    text = ok(lazyscope(build_dir, history, "show", "shapes"))
    assert all(h in text for h in hashes)
    # The metrics list the causes that synced, not a zero row for every cause.
    assert "SyncCause.item " in text and "SyncCause.save" not in text
    # A prefix shorter than 4 digits is refused, saying why.
    short = lazyscope(build_dir, history, "graph", "shapes", sorted(hashes)[0][:3])
    assert short.returncode == 1 and "too short: give at least 4 hex digits" in short.stderr


def test_an_eager_run_has_no_cache_hit_rate(build_dir, repo_root, tmp_path):
    path = tmp_path / "eager.sqlite"
    example = repo_root / "scripts/examples/linear_regression.py"
    ok(lazyscope(build_dir, path, "run", "--device", "cpu", "--quiet", example, "--", "--steps", 3))
    text = ok(lazyscope(build_dir, path, "show"))
    assert "executions   0 (no graph ran: no cache to hit)" in text and "hit rate" not in text


def test_graphs_and_one_graph_in_every_format(build_dir, history):
    graphs = json.loads(ok(lazyscope(build_dir, history, "graphs", "lr10", "--json")))["graphs"]
    assert len(graphs) == 1
    [graph] = graphs
    assert (int(graph["compiles"]), int(graph["executions"]), graph["has_ir"]) == (1, 10, True)
    [(stored_nodes,)] = query(history, "SELECT node_count FROM graphs WHERE run_id = 1")
    assert graph["node_count"] == stored_nodes
    full_hash = graph["hash"]  # 16 hex digits, as the text output writes it
    assert len(full_hash) == 16 and int(full_hash, 16) > 0

    ir = json.loads(ok(lazyscope(build_dir, history, "graph", "lr10", full_hash, "--json")))
    assert len(ir["nodes"]) == stored_nodes
    assert {"matmul", "mul"} <= {n["op"] for n in ir["nodes"]}

    text = ok(lazyscope(build_dir, history, "graph", "lr10", full_hash[:6]))
    assert text.startswith(f"graph {full_hash}: {stored_nodes} nodes")
    assert "program:" in text and "linear_regression.py" in text
    dot = ok(lazyscope(build_dir, history, "graph", "lr10", "0x" + full_hash, "--format", "dot"))
    assert dot.startswith(f'digraph "{full_hash}"') and dot.rstrip().endswith("}")
    assert dot.count(" -> ") == sum(len(n.get("operands", [])) for n in ir["nodes"])
    proto = ok(lazyscope(build_dir, history, "graph", "lr10", full_hash, "--format", "proto"))
    assert proto.count("nodes {") == stored_nodes

    missing = lazyscope(build_dir, history, "graph", "lr10", "abcdef0123")
    assert missing.returncode == 1
    assert "no graph 'abcdef0123' in run 1" in missing.stderr and full_hash in missing.stderr
    bad_format = lazyscope(build_dir, history, "graph", "lr10", full_hash, "--format", "svg")
    assert bad_format.returncode == 2 and "--format must be" in bad_format.stderr


def test_tag_rename_and_delete(build_dir, history):
    assert "tags: baseline fp32" in ok(lazyscope(build_dir, history, "tag", "lr10", "fp32", "baseline"))
    assert query(history, "SELECT tags_json FROM runs WHERE id = 1") == [('["baseline","fp32"]',)]
    ok(lazyscope(build_dir, history, "tag", "1", "--remove", "baseline"))
    assert query(history, "SELECT tags_json FROM runs WHERE id = 1") == [('["fp32"]',)]

    ok(lazyscope(build_dir, history, "rename", "lr5", "short run"))
    assert query(history, "SELECT name FROM runs WHERE id = 2") == [("short run",)]
    assert json.loads(ok(lazyscope(build_dir, history, "show", "short run", "--json")))["summary"]["run"]["id"] == "2"

    refused = lazyscope(build_dir, history, "delete", "shapes")  # stdin is not a terminal
    assert refused.returncode == 2 and "needs --yes" in refused.stderr
    assert query(history, "SELECT COUNT(*) FROM runs") == [(3,)]
    assert 'deleted run #3 "shapes"' in ok(lazyscope(build_dir, history, "delete", "shapes", "--yes"))
    for table in ["runs", "steps", "graphs", "compilations", "executions"]:
        column = "id" if table == "runs" else "run_id"
        assert query(history, f"SELECT COUNT(*) FROM {table} WHERE {column} = 3") == [(0,)], table
    assert query(history, "SELECT COUNT(*) FROM executions WHERE run_id = 1") == [(10,)]
    gone = lazyscope(build_dir, history, "delete", "shapes", "--yes")
    assert gone.returncode == 1 and "no run with id or name 'shapes'" in gone.stderr


def test_run_prints_the_diagnosis_at_the_end(build_dir, tmp_path):
    script = tmp_path / "recompile.py"
    script.write_text(RECOMPILING_SCRIPT)
    out = ok(lazyscope(build_dir, tmp_path / "h.sqlite", "run", script))
    assert "6 uncached" in out
    assert "diagnosis:" in out and "input 0 shape: the batch dimension (dim 0) took 3 values" in out
