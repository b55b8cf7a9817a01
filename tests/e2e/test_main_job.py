"""End to end: the README's main job, and the runner's exit codes and
statuses, checked against the SQLite file itself (Python's sqlite3 module,
independent of our storage library)."""
import os
import sqlite3
import subprocess
import textwrap

import pytest

RUNNING, SUCCEEDED, FAILED, INTERRUPTED = 1, 2, 3, 4


def run(build_dir, history, *args, cwd=None):
    env = dict(os.environ, LAZYSCOPE_HISTORY=str(history))
    return subprocess.run([str(build_dir / "bin" / "lazyscope"), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=300, cwd=cwd)


def query(history, sql, *params):
    with sqlite3.connect(history) as db:
        return db.execute(sql, params).fetchall()


def test_main_job_records_one_compile_then_cache_hits(build_dir, repo_root, tmp_path):
    history = tmp_path / "history.sqlite"
    steps = 20
    result = run(build_dir, history, "run", repo_root / "scripts/examples/linear_regression.py",
                 "--", "--steps", steps)
    assert result.returncode == 0, result.stderr
    assert "succeeded" in result.stdout
    assert "1 uncached" in result.stdout
    assert f"{steps - 1} of them cached" in result.stdout
    assert f"steps        {steps}," in result.stdout

    [(status, exit_code, name)] = query(history, "SELECT status, exit_code, name FROM runs")
    assert (status, exit_code, name) == (SUCCEEDED, 0, "linear_regression")
    assert query(history, "SELECT COUNT(*) FROM compilations") == [(1,)]
    assert query(history, "SELECT COUNT(*), SUM(cache_hit) FROM executions") == [(steps, steps - 1)]
    assert query(history, "SELECT COUNT(DISTINCT step) FROM steps") == [(steps,)]
    # The loss printed by the script falls.
    losses = [float(line.split()[-1]) for line in result.stdout.splitlines() if line.startswith("step ")]
    assert losses[-1] < losses[0] / 100


def test_script_exit_code_and_failure_are_recorded(build_dir, tmp_path):
    history = tmp_path / "history.sqlite"
    script = tmp_path / "boom.py"
    script.write_text(textwrap.dedent("""
        import lazyscope
        x = lazyscope.ones(2, 3, device="lazy:0")
        y = x @ x
    """))
    result = run(build_dir, history, "run", script)
    assert result.returncode == 1
    assert "Traceback" in result.stderr and "ShapeError" in result.stderr
    [(status, error, traceback)] = query(history, "SELECT status, error, traceback FROM runs")
    assert status == FAILED
    assert "ShapeError" in error and "[2, 3] and [2, 3]" in error
    assert "boom.py" in traceback

    exiting = tmp_path / "exit3.py"
    exiting.write_text("import sys\nsys.exit(3)\n")
    assert run(build_dir, history, "run", exiting).returncode == 3
    assert query(history, "SELECT exit_code FROM runs ORDER BY id DESC LIMIT 1") == [(3,)]


def test_script_arguments_reach_the_script(build_dir, tmp_path):
    script = tmp_path / "args.py"
    script.write_text("import sys\nprint('ARGS', sys.argv[1:])\n")
    result = run(build_dir, tmp_path / "h.sqlite", "run", "--name", "named", script, "--", "a", "--b")
    assert result.returncode == 0
    assert "ARGS ['a', '--b']" in result.stdout
    assert query(tmp_path / "h.sqlite", "SELECT name FROM runs") == [("named",)]


def test_bad_invocations_get_clear_messages(build_dir, tmp_path):
    result = run(build_dir, tmp_path / "h.sqlite", "run", tmp_path / "missing.py")
    assert result.returncode == 2 and "no such script" in result.stderr
    result = run(build_dir, tmp_path / "h.sqlite", "frobnicate")
    assert result.returncode == 2 and "unknown command" in result.stderr
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not a database" * 100)
    result = run(build_dir, garbage, "runs")
    assert result.returncode == 1 and str(garbage) in result.stderr
