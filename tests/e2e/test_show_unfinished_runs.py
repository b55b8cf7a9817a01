"""End to end: `lazyscope show` of a run that did not succeed says how it
ended, shows the error and the traceback, and what was recorded until then:
a syntax error, an exception in the middle of training, devices mixed in one
op, and Ctrl-C (test_run_output_and_signals.py checks the SQLite rows of the
signals; here it is what `show` tells the user)."""
import json
import os
import signal
import sqlite3
import subprocess
import textwrap
import threading

MIDWAY = textwrap.dedent("""\
    import lazyscope
    from lazyscope.core import lazy_model as lm
    w = lazyscope.randn(3, 1, device='lazy:0')
    for step in range(5):
        loss = (lazyscope.randn(4, 3, device='lazy:0') @ w).sum()
        lazyscope.log("loss", loss)
        lm.mark_step()
        if step == 2:
            raise RuntimeError("diverged at step 2")
""")

MIXED_DEVICES = textwrap.dedent("""\
    import lazyscope
    from lazyscope.core import lazy_model as lm
    w = lazyscope.randn(3, 1, device='lazy:0')
    x = lazyscope.randn(4, 3)
    lm.mark_step()
    y = x @ w
""")

LOOPING = textwrap.dedent("""\
    import time
    import lazyscope
    from lazyscope.core import lazy_model as lm
    w = lazyscope.randn(3, 1, device='lazy:0')
    step = 0
    while True:
        loss = (w * 2.0).sum()  # kept alive: the barrier runs its graph, a step
        lm.mark_step()
        print(f"step {step}", flush=True)
        step += 1
        time.sleep(0.02)
""")


def command(build_dir, *args):
    return [str(build_dir / "bin" / "lazyscope"), *map(str, args)]


def environment(history):
    return dict(os.environ, LAZYSCOPE_HISTORY=str(history))


def lazyscope(build_dir, history, *args):
    return subprocess.run(command(build_dir, *args), env=environment(history), capture_output=True, text=True,
                          timeout=300)


def run_script(build_dir, tmp_path, name, text):
    history = tmp_path / "history.sqlite"
    script = tmp_path / f"{name}.py"
    script.write_text(text)
    return history, lazyscope(build_dir, history, "run", "--name", name, script)


def show(build_dir, history, run="last"):
    as_json = lazyscope(build_dir, history, "show", run, "--json")
    text = lazyscope(build_dir, history, "show", run)
    assert as_json.returncode == 0 and text.returncode == 0, as_json.stderr + text.stderr
    return json.loads(as_json.stdout), text.stdout


def test_syntax_error_is_a_failed_run_with_the_message(build_dir, tmp_path):
    history, result = run_script(build_dir, tmp_path, "syntax", "x = (\n")
    assert result.returncode == 1, result.stderr
    report, text = show(build_dir, history)
    run = report["summary"]["run"]
    assert run["status"] == "RUN_STATUS_FAILED" and run["exit_code"] == 1
    assert run["error"].startswith("SyntaxError: '(' was never closed")
    assert 'run #1 "syntax" failed in' in text and "(exit code 1)" in text
    assert "  error        SyntaxError: '(' was never closed (syntax.py, line 1)" in text
    assert "ended        the script raised an error after 0 recorded steps" in text
    # As Python prints it: no runpy frames before the script's line, so no "Traceback" header.
    assert "\ntraceback (where the script failed):\n  File \"" in text and "runpy" not in text
    assert text.rstrip().endswith("SyntaxError: '(' was never closed")


def test_exception_mid_training_shows_the_traceback_and_the_steps_before_it(build_dir, tmp_path):
    history, result = run_script(build_dir, tmp_path, "midway", MIDWAY)
    assert result.returncode == 1
    report, text = show(build_dir, history)
    assert report["summary"]["run"]["status"] == "RUN_STATUS_FAILED"
    assert report["summary"]["run"]["error"] == "RuntimeError: diverged at step 2"
    assert int(report["summary"]["steps"]) == 3  # steps 0, 1 and 2 were recorded before the raise
    assert "ended        the script raised an error after 3 recorded steps" in text
    assert "  steps        3, median" in text
    assert "compiles:\n  step 0" in text  # what was recorded is still shown
    traceback = text[text.index("traceback (where the script failed):"):]
    assert 'midway.py", line 9, in <module>' in traceback
    assert traceback.rstrip().endswith("RuntimeError: diverged at step 2")
    # The losses logged up to the failure are kept.
    with sqlite3.connect(history) as db:
        assert db.execute("SELECT COUNT(*) FROM scalars WHERE name = 'loss'").fetchone()[0] == 3


def test_mixing_devices_names_the_op_and_the_line(build_dir, tmp_path):
    history, result = run_script(build_dir, tmp_path, "mixed", MIXED_DEVICES)
    assert result.returncode == 1
    report, text = show(build_dir, history)
    run = report["summary"]["run"]
    assert run["status"] == "RUN_STATUS_FAILED"
    assert run["error"].startswith("DeviceMismatchError: matmul: operands are on different devices")
    assert run["error"].endswith("(at mixed.py:6)")
    assert "error        DeviceMismatchError: matmul:" in text
    assert 'mixed.py", line 6, in <module>' in text
    # The summary points at the traceback where it is: above, after `run`
    # (the script printed it); last, in `show`.
    assert "the traceback above" in result.stdout
    assert "Traceback (most recent call last)" in result.stderr
    shown_at = text.index("the traceback last")
    assert text.index("traceback (where the script failed)") > shown_at
    # One tiny upload before the failure is not a "blocking transfer".
    assert "diagnosis: the run did not finish (failed); nothing in the part that was recorded slows it down" in text
    assert "nothing slows this run down" not in text


def test_ctrl_c_is_shown_as_interrupted_with_what_was_recorded(build_dir, tmp_path):
    history = tmp_path / "history.sqlite"
    script = tmp_path / "loop.py"
    script.write_text(LOOPING)
    process = subprocess.Popen(command(build_dir, "run", "--name", "looping", script), env=environment(history),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(120, process.kill)  # a run that never prints must not hang the suite
    watchdog.start()
    try:
        for _ in range(3):
            assert process.stdout.readline().startswith("step ")
    finally:
        watchdog.cancel()
    process.send_signal(signal.SIGINT)
    try:
        _, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    assert process.returncode == 130, err

    report, text = show(build_dir, history, "looping")
    run = report["summary"]["run"]
    assert run["status"] == "RUN_STATUS_INTERRUPTED" and run["exit_code"] == 130
    assert int(report["summary"]["steps"]) >= 3
    assert 'run #1 "looping" interrupted in' in text and "(exit code 130)" in text
    assert "ended        stopped by a signal (Ctrl-C or SIGTERM) after" in text
    assert "KeyboardInterrupt" in text  # the traceback of where Ctrl-C landed
