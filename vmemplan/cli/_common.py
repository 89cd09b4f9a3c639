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

from vmemplan.errors import ExitCode, UsageError, VmemplanError

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["reports_errors", "emit", "console", "fail", "gpu_completion", "model_completion"]


def _scrub(text: str) -> str:
    token = os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")
    if token and len(token) > 4:
        text = text.replace(token, "***")
    return text


def fail(error: VmemplanError) -> None:
    """Print one ``error:`` line (and a ``hint:`` line) on stderr and exit with its code."""
    sys.stderr.write(_scrub(f"error: {error.message}") + "\n")
    if error.hint:
        sys.stderr.write(_scrub(f"hint: {error.hint}") + "\n")
    raise typer.Exit(int(error.exit_code))


def reports_errors(command: F) -> F:
    """Turn an expected failure into one stderr line and its documented exit code."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except VmemplanError as error:
            if os.environ.get("VMEMPLAN_DEBUG"):
                raise
            fail(error)
        except KeyboardInterrupt:
            sys.stderr.write("interrupted\n")
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
        except ValueError as error:  # pydantic validation of flag values
            if os.environ.get("VMEMPLAN_DEBUG"):
                raise
            from pydantic import ValidationError

            if isinstance(error, ValidationError):
                first = error.errors()[0]
                loc = "--" + "-".join(str(p) for p in first["loc"]).replace("_", "-")
                fail(UsageError(f"{loc}: {first['msg']}"))
            raise

    return wrapper  # type: ignore[return-value]


def console(*, stderr: bool = False, no_color: bool = False) -> Any:
    """A rich Console made per call (never at import), honouring NO_COLOR and --no-color."""
    from rich.console import Console

    no_color = no_color or bool(os.environ.get("NO_COLOR"))
    return Console(stderr=stderr, no_color=no_color, highlight=False,
                   color_system=None if no_color else "auto", soft_wrap=False)


def emit(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def gpu_completion(incomplete: str) -> list[str]:
    """Complete --gpu values from the registry (ids and aliases)."""
    try:
        from vmemplan.registry import load_registry

        keys = load_registry().gpu_keys()
    except VmemplanError:
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
