"""End to end: lazyscope-gui's command line says what is wrong before any
window opens: --run naming no run of the history, and --tab naming no tab,
are errors on stderr with what there is, exit status 2 (as the CLI's)."""
import os
import subprocess

import pytest


def gui(build_dir, config_home, *args):
    # Its own settings: the person's remembered window state plays no part.
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(config_home))
    # A window that opened would run until killed: the timeout says so.
    return subprocess.run([str(build_dir / "bin" / "lazyscope-gui"), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def history(build_dir, repo_root, tmp_path):
    path = tmp_path / "h.sqlite"
    example = repo_root / "scripts/examples/linear_regression.py"
    for _ in range(2):
        result = subprocess.run([str(build_dir / "bin" / "lazyscope"), "run", "--history", str(path), "--quiet",
                                 str(example), "--", "--steps", "2"], capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
    return path


@pytest.mark.parametrize("ref", ["999", "abc"])
def test_an_unknown_run_is_an_error(build_dir, history, ref):
    result = gui(build_dir, history.parent, history, "--run", ref)
    assert result.returncode == 2
    assert f"no run “{ref}” in {history}" in result.stderr
    assert "(1 to 2)" in result.stderr and "linear_regression" in result.stderr


def test_a_run_of_a_missing_history_is_an_error(build_dir, tmp_path):
    result = gui(build_dir, tmp_path, tmp_path / "none.sqlite", "--run", "1")
    assert result.returncode == 2
    assert "there is no history at" in result.stderr


def test_an_unknown_tab_lists_the_tabs(build_dir, history):
    result = gui(build_dir, history.parent, history, "--tab", "bogus")
    assert result.returncode == 2
    assert 'no tab named "bogus"; the tabs are: overview, recompilations, graphs' in result.stderr
