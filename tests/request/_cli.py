"""Run the CLI through main() and capture its output (the same contract as tests/test_exit_codes.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> Run:
    from vmemplan.cli import main

    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(args)
    out = capsys.readouterr()
    code = exited.value.code
    return Run(0 if code is None else int(code), out.out, out.err)


def error_lines(stderr: str) -> tuple[str, str]:
    """(the error line, the hint line): one each, nothing else, no traceback."""
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    assert len(lines) == 2, stderr
    assert lines[0].startswith("error: ") and lines[1].startswith("hint: "), stderr
    return lines[0], lines[1]
