"""`vmemplan … | head` ends quietly with exit 0, also while a command is still streaming (a CSV
sweep writes row by row: click turns a broken pipe inside a command into exit 1)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("args", [
    ["sweep", "meta-llama/Llama-3.1-8B", "--gpu", "h100", "--vary", "max-model-len=1:100000:1", "-f", "csv"],
    ["gpus"],
])
def test_a_reader_that_stops_early_is_not_an_error(args):
    p = subprocess.Popen([sys.executable, "-m", "vmemplan", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    first = p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 0, err
    assert first and err == ""
