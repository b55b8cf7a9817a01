"""End to end: the options of `lazyscope run` reach the engine's environment
and are recorded in the run's settings; the progress line (plain lines when
stderr is not a terminal, one line redrawn in place on a terminal)."""
import json
import os
import pty
import sqlite3
import subprocess
import textwrap

# Prints what the options set, then runs ten short steps (~1 s in all, so that
# progress lines printed every 0.1 s or redrawn every 0.2 s certainly appear).
SCRIPT = textwrap.dedent("""
    import os, sys, time
    import lazyscope
    from lazyscope import _C
    from lazyscope.core import lazy_model as lm
    print("ARGS", sys.argv[1:])
    for name in ("LAZYSCOPE_DEFAULT_DEVICE", "LAZYSCOPE_USE_BF16", "LAZYSCOPE_FORCE_FALLBACK"):
        print(name, os.environ.get(name))
    print("DEVICES", _C.device_count())
    w = lazyscope.randn(3, 1, device="lazy:0")
    for i in range(10):
        x = lazyscope.randn(4, 3, device="lazy:0")
        loss = (x @ w).sum()
        lm.mark_step()
        time.sleep(0.1)
        if i == 5:
            print("half way", file=sys.stderr)
""")


def lazyscope(build_dir, *args, **kwargs):
    env = dict(os.environ)
    for name in ("LAZYSCOPE_DEFAULT_DEVICE", "LAZYSCOPE_USE_BF16", "LAZYSCOPE_FORCE_FALLBACK", "LAZYSCOPE_DEVICE_COUNT"):
        env.pop(name, None)
    return subprocess.run([str(build_dir / "bin" / "lazyscope"), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=300, **kwargs)


def run_row(history):
    with sqlite3.connect(history) as db:
        return db.execute("SELECT name, tags_json, settings_json, args_json FROM runs ORDER BY id DESC LIMIT 1").fetchone()


def test_options_reach_the_script_and_are_recorded(build_dir, tmp_path):
    history = tmp_path / "h.sqlite"
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    # Options before and after the script; the script's own after "--".
    result = lazyscope(build_dir, "run", "--tag", "a", script, "--history", history, "--name", "opts",
                       "--device", "cpu", "--devices", 2, "--bf16", "--force-fallback", "nonzero,sort",
                       "--tag", "b", "--quiet", "--", "--name", "theirs")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "ARGS ['--name', 'theirs']" in out
    assert "LAZYSCOPE_DEFAULT_DEVICE cpu" in out
    assert "LAZYSCOPE_USE_BF16 1" in out
    assert "LAZYSCOPE_FORCE_FALLBACK nonzero,sort" in out
    assert "DEVICES 2" in out
    name, tags, settings, args = run_row(history)
    assert name == "opts"
    assert json.loads(tags) == ["a", "b"]
    assert json.loads(args) == ["--name", "theirs"]
    assert json.loads(settings) == {
        "LAZYSCOPE_DEFAULT_DEVICE": "cpu",
        "LAZYSCOPE_DEVICE_COUNT": "2",
        "LAZYSCOPE_USE_BF16": "1",
        "LAZYSCOPE_FORCE_FALLBACK": "nonzero,sort",
    }
    # The settings read back through the query library too.
    shown = json.loads(lazyscope(build_dir, "show", "opts", "--json", "--history", history).stdout)
    assert shown["summary"]["run"]["settings"]["LAZYSCOPE_USE_BF16"] == "1"


def test_words_after_the_script_that_are_not_ours_go_to_the_script(build_dir, tmp_path):
    history = tmp_path / "h.sqlite"
    script = tmp_path / "args.py"
    script.write_text("import sys\nprint('ARGS', sys.argv[1:])\n")
    result = lazyscope(build_dir, "run", script, "--history", history, "--steps", 5, "--frames")
    assert result.returncode == 0, result.stderr
    assert "ARGS ['--steps', '5', '--frames']" in result.stdout
    assert json.loads(run_row(history)[1]) == []
    # With no options, nothing is recorded as set.
    assert json.loads(run_row(history)[2]) == {}


def test_our_options_after_a_script_argument_are_still_ours(build_dir, tmp_path, monkeypatch):
    # Issue 15 item 1: `run ok.py --bogus --history H` recorded into the
    # default history, --history H having become the script's arguments.
    default = tmp_path / "default.sqlite"
    monkeypatch.setenv("LAZYSCOPE_HISTORY", str(default))
    history = tmp_path / "named.sqlite"
    script = tmp_path / "ok.py"
    script.write_text("import sys\nprint('ARGS', sys.argv[1:])\n")
    result = lazyscope(build_dir, "run", script, "--bogus", "--history", history, "--tag", "x", "7",
                       "--", "--tag", "theirs")
    assert result.returncode == 0, result.stderr
    assert "ARGS ['--bogus', '7', '--tag', 'theirs']" in result.stdout
    assert history.exists() and not default.exists()
    assert json.loads(run_row(history)[1]) == ["x"]
    assert json.loads(run_row(history)[3]) == ["--bogus", "7", "--tag", "theirs"]


def test_help_and_bad_options_are_explained(build_dir, tmp_path):
    result = lazyscope(build_dir, "run", "--help")
    assert result.returncode == 0
    for option in ("--history", "--name", "--tag", "--device", "--devices", "--bf16", "--force-fallback",
                   "--quiet", "--progress-every", "LAZYSCOPE_DEFAULT_DEVICE"):
        assert option in result.stdout, option
    script = tmp_path / "s.py"
    script.write_text("pass\n")
    history = tmp_path / "h.sqlite"
    cases = [
        (["--device", "gpu"], "--device is cpu or lazy, got 'gpu'"),
        (["--devices", "two"], "--devices needs a positive number, got 'two'"),
        (["--devices", "0"], "--devices needs a positive number"),
        (["--force-fallback", "nonzero,,sort"], "--force-fallback needs op names"),
        (["--progress-every", "-1"], "--progress-every needs a number of seconds"),
        (["--frobnicate"], "unknown option --frobnicate"),
    ]
    for options, message in cases:
        result = lazyscope(build_dir, "run", *options, script, "--history", history)
        assert result.returncode == 2, options
        assert message in result.stderr, (options, result.stderr)
    result = lazyscope(build_dir, "run", script, "--history", history, "--name")
    assert result.returncode == 2 and "--name needs a value" in result.stderr
    assert not history.exists()  # nothing was recorded for a bad command line
    result = lazyscope(build_dir, "run", "--history", history)
    assert result.returncode == 2 and "missing the script" in result.stderr


def test_progress_lines_when_stderr_is_not_a_terminal(build_dir, tmp_path):
    history = tmp_path / "h.sqlite"
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    result = lazyscope(build_dir, "run", script, "--history", history, "--progress-every", "0.1")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("lazyscope: step ")]
    assert lines, result.stderr
    assert "\r" not in result.stderr and "\x1b" not in result.stderr  # plain lines for a log
    for line in lines:
        assert "steps/s" in line and "compiles " in line and "fallbacks 0" in line, line
    # The last finished step as the script numbers it (0-9), "-" before the first.
    steps = [int(line.split()[2]) for line in lines if line.split()[2] != "-"]
    assert steps == sorted(steps) and steps[-1] <= 9
    # The script's own line is intact, and progress is not recorded as its output.
    assert "half way\n" in result.stderr
    output = lazyscope(build_dir, "show", "--output", "--history", history).stdout
    assert "half way" in output and "lazyscope: step" not in output

    quiet = lazyscope(build_dir, "run", script, "--history", history, "--progress-every", "0.1", "--quiet")
    assert quiet.returncode == 0
    assert "lazyscope: step" not in quiet.stderr


def test_progress_line_on_a_terminal_is_redrawn_and_cleared(build_dir, tmp_path):
    history = tmp_path / "h.sqlite"
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    leader, follower = pty.openpty()
    process = subprocess.Popen([str(build_dir / "bin" / "lazyscope"), "run", str(script), "--history", str(history)],
                               stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    screen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        screen += chunk
    os.close(leader)
    assert process.wait(timeout=300) == 0
    clear = b"\r\x1b[K"
    assert screen.count(b"lazyscope: step ") >= 2, screen  # redrawn while running
    # Each draw starts by clearing the line, so it is drawn in place.
    assert screen.count(b"lazyscope: step ") == screen.count(clear + b"lazyscope: step ")
    # The script's line never lands after a drawn progress line ...
    before = screen.split(b"half way")[0].rsplit(b"\n", 1)[-1]
    assert b"lazyscope: step" not in before.rsplit(clear, 1)[-1], before
    # ... and the line is cleared at the end.
    assert b"lazyscope: step" not in screen.rsplit(clear, 1)[-1]


def test_show_reports_the_final_metrics(build_dir, tmp_path):
    history = tmp_path / "h.sqlite"
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    assert lazyscope(build_dir, "run", script, "--history", history, "--quiet").returncode == 0
    report = json.loads(lazyscope(build_dir, "show", "--json", "--history", history).stdout)
    assert "metrics" in report["metrics"]
    import lazyscope._C as engine
    if not hasattr(engine, "publish_metric_snapshot"):
        return  # an engine without metric snapshots records none; the report is empty
    names = {m["name"] for m in report["metrics"]["metrics"]}
    assert names, report["metrics"]
    text = lazyscope(build_dir, "show", "--history", history).stdout
    assert "metrics (last snapshot" in text
