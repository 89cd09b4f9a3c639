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
    """Replace any Hugging Face token from the environment by ``***``."""
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        token = os.environ.get(name, "").strip()
        if len(token) > 4:
            text = text.replace(token, "***")
    return text


def report(message: str, hint: str | None = None) -> None:
    """Write one ``error:`` line (and a ``hint:`` line) on stderr, token scrubbed, nothing else.

    A message is folded onto one line so that the contract "one line per field" holds even
    for multi-line messages (a registry error listing several problems).
    """
    sys.stderr.write(_scrub("error: " + " ".join(str(message).split())) + "\n")
    if hint:
        sys.stderr.write(_scrub("hint: " + " ".join(str(hint).split())) + "\n")
    sys.stderr.flush()


def print_traceback_if_debug() -> None:
    """With ``VMEMPLAN_DEBUG`` set, the traceback being handled, on stderr, token scrubbed."""
    if os.environ.get("VMEMPLAN_DEBUG"):
        import traceback

        sys.stderr.write(_scrub(traceback.format_exc()))


def fail(error: VmemplanError) -> None:
    """Print one ``error:`` line (and a ``hint:`` line) on stderr and exit with its code."""
    report(error.message, error.hint)
    raise typer.Exit(int(error.exit_code))


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
            sys.stderr.write("error: interrupted\n")
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
        except ValueError as error:  # pydantic validation of flag values
            from pydantic import ValidationError

            if isinstance(error, ValidationError):
                print_traceback_if_debug()
                first = error.errors()[0]
                loc = "--" + "-".join(str(p) for p in first["loc"]).replace("_", "-")
                fail(UsageError(f"{loc}: {first['msg']}"))
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


def console(*, stderr: bool = False, no_color: bool = False) -> Any:
    """A rich Console made per call (never at import), honouring NO_COLOR and --no-color, at
    :func:`output_width` columns."""
    from rich.console import Console

    no_color = no_color or bool(os.environ.get("NO_COLOR"))
    return Console(stderr=stderr, no_color=no_color, highlight=False, width=output_width(stderr=stderr),
                   color_system=None if no_color else "auto", soft_wrap=False)


def emit(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def gpu_completion(incomplete: str) -> list[str]:
    """Complete --gpu values (ids and aliases) from the registry's ``gpus.yaml``.

    Reads that one file (not the whole registry) so that a TAB answers quickly, and returns
    nothing rather than an error when the registry cannot be read.
    """
    try:
        import yaml

        from vmemplan.registry import Registry, parse_gpus, registry_dir

        root = registry_dir()
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        data = yaml.load((root / "gpus.yaml").read_text(encoding="utf-8"), Loader=loader)  # noqa: S506
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


