"""Progress shown while vmemplan waits on the outside world (the Hub): a spinner on stderr."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

__all__ = ["spinner"]


@contextlib.contextmanager
def spinner(message: str) -> Iterator[None]:
    """A spinner on stderr while fetching, only when stderr is a terminal."""
    if not sys.stderr.isatty():
        yield
        return
    from rich.console import Console

    with Console(stderr=True).status(message):
        yield
