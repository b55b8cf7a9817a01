"""The README's Python examples run as written: each ```python block that
trains (it calls lm.mark_step()) is run under the runner, and its recording
is checked with Python's sqlite3 (independent of our storage library)."""
import re
import sqlite3
import subprocess

import pytest


def python_blocks(repo_root):
    text = (repo_root / "README.md").read_text()
    return [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "lm.mark_step()" in b]


def test_readme_has_training_examples(repo_root):
    assert len(python_blocks(repo_root)) >= 2


@pytest.mark.parametrize("index", range(2))
def test_readme_example_runs_and_is_recorded(build_dir, repo_root, tmp_path, index):
    script = tmp_path / f"readme_{index}.py"
    block = python_blocks(repo_root)[index]
    script.write_text(block)
    history = tmp_path / "h.sqlite"
    result = subprocess.run([str(build_dir / "bin" / "lazyscope"), "run", "--history", str(history), str(script)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    with sqlite3.connect(history) as db:
        [(compiles,)] = db.execute("SELECT COUNT(*) FROM compilations").fetchall()
        [(executions, hits)] = db.execute("SELECT COUNT(*), SUM(cache_hit) FROM executions").fetchall()
        losses = [v for (v,) in db.execute("SELECT value FROM scalars WHERE name = 'loss' ORDER BY step")]
    assert compiles >= 1 and executions >= 1
    assert bool(losses) == ("lazyscope.log(" in block)
    if losses:  # the training example logs its loss every step: one compile, then cache hits, loss falls
        assert compiles == 1 and hits == executions - 1
        assert losses[-1] < losses[0]
