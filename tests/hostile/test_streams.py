"""Issue 15: closed or full standard streams, Ctrl-C during the imports."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from tests.hostile.conftest import HANG_S, REPO, check_contract, cli

SIZE = "vmemplan size meta-llama/Llama-3.1-8B --gpu h100"
PY = f"{sys.executable} -m vmemplan"


@pytest.mark.parametrize("redirect", [">&-", ">/dev/full"])
def test_unwritable_stdout_exits_quietly_with_the_documented_code(redirect):
    run = cli(shell=f"{PY} size meta-llama/Llama-3.1-8B --gpu h100 {redirect}", stdout=subprocess.DEVNULL)
    assert run.code == 4, run.stderr
    assert "Traceback" not in run.stderr
    check_contract(run, 4)


def test_closed_stderr_and_a_failure():
    run = cli(shell=f"{PY} size /nonexistent/config.json --gpu h100 2>&-")
    assert run.code == 4


def test_closed_stdin_for_explain_log():
    run = cli(shell=f"{PY} explain-log - <&-")
    check_contract(run, 4)


def test_broken_pipe():
    run = cli(shell=f"{PY} gpus | head -c 10 >/dev/null; exit ${{PIPESTATUS[0]}}")
    assert "Traceback" not in run.stderr
    assert run.code == 0, run.stderr


@pytest.mark.parametrize("delay", [0.05, 0.1, 0.2, 0.4])
def test_ctrl_c_during_imports(delay):
    """A SIGINT at any moment once vmemplan's code runs: one error line, one hint, exit 130.

    A signal that lands while the interpreter itself is still starting (before the first line
    of vmemplan/__init__.py) is Python's to report; such a traceback names no vmemplan file.
    """
    proc = subprocess.Popen([sys.executable, "-m", "vmemplan", "size", "meta-llama/Llama-3.1-8B", "--gpu", "h100"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=HANG_S)
    text = err.decode()
    if "Traceback" in text:
        assert "vmemplan" not in text, text  # only before vmemplan started
        return
    assert proc.returncode in (130, 0, -signal.SIGINT), text  # 0: it finished before the signal
    if proc.returncode == 130:
        assert text.count("error:") == 1 and text.count("hint:") == 1, text
