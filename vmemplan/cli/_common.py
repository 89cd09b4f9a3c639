"""Shared CLI plumbing: the error decorator, output, and option helpers.

The only ``try/except`` for expected failures in the CLI lives in :func:`reports_errors`.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from vmemplan.core.errors import ExitCode, UsageError, VmemplanError

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "reports_errors", "emit", "console", "fail", "report", "gpu_completion", "model_completion",
    "print_traceback_if_debug",
]


def _scrub(text: str) -> str:
    """Make text from anywhere safe to print: no token, no URL userinfo, no control characters."""
    from vmemplan.sources._io import printable, scrub_secrets

    return printable(scrub_secrets(text))


#: The hint an error gets when the code that raised it gave none, by exit code.
_DEFAULT_HINTS = {
    2: "see `vmemplan COMMAND --help` for the flags and the values they take",
    3: "see the plan above for what would not fit, and relax the target or the flags",
    4: "check the input named above (a config.json, model directory, log or GPU id)",
    5: "reinstall vmemplan, or unset VMEMPLAN_REGISTRY to use the registry it ships with",
    6: "set HF_HUB_OFFLINE=1 to skip the network, or pass a local config.json or model directory",
}


#: The most characters of one word (an echoed value, a path) an error line shows; longer ones
#: end in an ellipsis, so a 5,000-digit number or a 20,000-deep JSON is not printed back whole.
ECHO_LIMIT = 200


def _clip_words(text: str) -> str:
    return " ".join(w if len(w) <= ECHO_LIMIT else w[:ECHO_LIMIT] + "…" for w in text.split())


def _command_path() -> str:
    """``vmemplan size`` (the command being run) for hints; ``vmemplan`` when none is known."""
    try:
        from typer._click.globals import get_current_context  # typer's own click (0.29)

        ctx = get_current_context(silent=True)
        if ctx is not None and ctx.command_path and " " in ctx.command_path:
            return ctx.command_path
    except Exception:  # noqa: BLE001 - a hint must never fail the error it explains
        pass
    commands = getattr(sys.modules.get("vmemplan.cli"), "COMMANDS", {})  # loaded by now; no import cycle
    for arg in sys.argv[1:]:
        if not arg.startswith("-"):
            return f"vmemplan {arg}" if arg in commands else "vmemplan"
    return "vmemplan"


def report(message: str, hint: str | None = None, *, code: int | None = None) -> None:
    """Write one ``error:`` line and one ``hint:`` line on stderr: token and userinfo scrubbed,
    control characters and escape sequences removed, nothing else.

    A message is folded onto one line so that the contract "one line per field" holds even
    for multi-line messages (a registry error listing several problems).  An error raised
    without a hint gets the default hint of its exit code.
    """
    if not hint:
        hint = _DEFAULT_HINTS.get(code if code is not None else 4, _DEFAULT_HINTS[4])
    hint = str(hint).replace("vmemplan COMMAND", _command_path())
    text = _scrub("error: " + _clip_words(str(message))) + "\n" + _scrub("hint: " + _clip_words(hint)) + "\n"
    stream = sys.stderr
    if stream is None:
        return
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):  # stderr closed or full: the exit code still says it
        pass


def print_traceback_if_debug() -> None:
    """With ``VMEMPLAN_DEBUG`` set, the traceback being handled, on stderr, token scrubbed."""
    if os.environ.get("VMEMPLAN_DEBUG"):
        import traceback

        if sys.stderr is not None:
            sys.stderr.write(_scrub(traceback.format_exc()))


def fail(error: VmemplanError) -> None:
    """Print one ``error:`` line (and a ``hint:`` line) on stderr and exit with its code."""
    report(error.message, error.hint, code=int(error.exit_code))
    raise typer.Exit(int(error.exit_code))


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the flush at exit cannot fail on the closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def reports_errors(command: F) -> F:
    """Turn an expected failure into one stderr line and its documented exit code.

    With ``VMEMPLAN_DEBUG=1`` the traceback is printed first; the exit code does not change.
    """

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except VmemplanError as error:
            print_traceback_if_debug()
            fail(error)
        except KeyboardInterrupt:
            report("interrupted", "the run was stopped by Ctrl-C (SIGINT) before it finished; run it again")
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
        except BrokenPipeError:  # `vmemplan … | head`: the reader has what it wanted (click would exit 1)
            _quiet_stdout()
            raise typer.Exit(0) from None
        except ValueError as error:  # pydantic validation of flag values
            from pydantic import ValidationError

            if isinstance(error, ValidationError):
                print_traceback_if_debug()
                first = error.errors()[0]
                loc = "--" + "-".join(str(p) for p in first["loc"]).replace("_", "-")
                fail(UsageError(f"{loc}: {first['msg']}", hint=f"see `vmemplan COMMAND --help` for the values {loc} takes"))
            raise

    return wrapper  # type: ignore[return-value]


#: The width of output that does not go to a terminal (a pipe, a file, CI logs): fixed, so that
#: a script sees the same text on every machine.  ``COLUMNS`` overrides it.
PIPE_WIDTH = 100


def output_width(*, stderr: bool = False) -> int:
    """Columns to render for: the terminal's width, else ``COLUMNS`` when set, else :data:`PIPE_WIDTH`."""
    stream = sys.stderr if stderr else sys.stdout
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        if stream.isatty():
            import shutil

            return shutil.get_terminal_size((PIPE_WIDTH, 24)).columns
    except (AttributeError, ValueError, OSError):
        pass
    return PIPE_WIDTH


class _TerminalSafe:
    """A text stream that lets rich's colour codes (SGR, ``ESC [ … m``) through and drops every
    other escape sequence and control character, whatever string from an input reaches it."""

    _UNSAFE = __import__("re").compile(
        r"\x1b\[[0-9;]*m"  # kept: SGR colour codes (group-less alternative checked below)
        r"|\x1b(?:\[[0-?]*[ -/]*[@-~]|[@-Z\\-_]?)"
        r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
    )

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _clean(self, text: str) -> str:
        return self._UNSAFE.sub(lambda m: m.group(0) if m.group(0).endswith("m") and m.group(0).startswith("\x1b[")
                                and m.group(0)[2:-1].replace(";", "").isdigit() or m.group(0) == "\x1b[m" else "", text)

    def write(self, text: str) -> int:
        self._stream.write(self._clean(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding, ...
        return getattr(self._stream, name)


def console(*, stderr: bool = False, no_color: bool = False) -> Any:
    """A rich Console made per call (never at import), honouring NO_COLOR and --no-color, at
    :func:`output_width` columns, whose output carries no escape sequence or control character but
    rich's own colours."""
    from rich.console import Console

    no_color = no_color or bool(os.environ.get("NO_COLOR"))
    stream = sys.stderr if stderr else sys.stdout
    return Console(file=_TerminalSafe(stream) if stream is not None else None, stderr=stderr,
                   no_color=no_color, highlight=False, width=output_width(stderr=stderr),
                   color_system=None if no_color else "auto", soft_wrap=False)


def emit(text: str) -> None:
    """Write plain output (JSON, CSV, log lines, text) with control characters removed."""
    from vmemplan.sources._io import printable

    if sys.stdout is None:
        import errno

        raise OSError(errno.EBADF, "standard output is closed")
    sys.stdout.write(printable(text))
    sys.stdout.flush()


def gpu_completion(incomplete: str) -> list[str]:
    """Complete --gpu values (ids and aliases) from the registry's ``gpus.yaml``.

    Reads that one file (not the whole registry) so that a TAB answers quickly, and returns
    nothing rather than an error when the registry cannot be read.
    """
    try:
        from vmemplan._yaml import load_yaml_file  # a regular file, bounded, through the parse cache
        from vmemplan.registry import Registry, parse_gpus, registry_dir

        root = registry_dir()
        data = load_yaml_file(root / "gpus.yaml")
        keys = Registry(root=root, gpus=parse_gpus(data), rules_packs=(), cost_model=None, speed=None).gpu_keys()
    except Exception:  # noqa: BLE001 - completion must never break the shell
        return []
    return [k for k in keys if k.lower().startswith(incomplete.lower())]


def model_completion(incomplete: str) -> list[str]:
    """Complete MODEL from the bundled registry ids."""
    try:
        from vmemplan.sources import list_bundled_models

        ids = list_bundled_models()
    except Exception:  # completion must never break the shell
        return []
    return [m for m in ids if m.lower().startswith(incomplete.lower())]


