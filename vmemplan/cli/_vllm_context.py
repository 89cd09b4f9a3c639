"""Where a planning command keeps the vLLM command it parsed (the click context's meta), so that
:func:`vmemplan.cli._options.with_engine_flags` can read it without importing the parser."""

from __future__ import annotations

from typing import Any

__all__ = ["META_KEY", "current_vllm_command"]

META_KEY = "vmemplan.vllm_command"


def _get_current_context() -> Any:
    try:  # typer >= 0.26 vendors click as typer._click
        from typer._click.globals import get_current_context
    except ImportError:  # pragma: no cover - older typer on the real click
        from click import get_current_context
    return get_current_context(silent=True)


def current_vllm_command() -> Any:
    """The :class:`~vmemplan.request.vllm_args.ParsedCommand` of the running command, or None."""
    ctx = _get_current_context()
    while ctx is not None:
        if META_KEY in ctx.meta:
            return ctx.meta[META_KEY]
        ctx = ctx.parent
    return None
