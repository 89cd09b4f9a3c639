"""Regular expressions compiled when first used, not when their module is imported.

A module-level ``re.compile`` runs ``re``'s parser and compiler (pure Python) at import, for
every pattern of every imported module, whether the run uses it or not: two dozen of them were
about a tenth of a first ``plan()``.  :func:`lazy` returns a stand-in with the pattern methods
vmemplan calls; the first call compiles the pattern (``re``'s own cache keeps it), every later
call goes straight to the compiled object.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["LazyPattern", "lazy"]


class LazyPattern:
    """``re.compile(pattern, flags)``, compiled on first use."""

    __slots__ = ("pattern", "flags", "_compiled")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled

    def match(self, string: str, *args: Any) -> re.Match[str] | None:
        return self.compiled().match(string, *args)

    def fullmatch(self, string: str, *args: Any) -> re.Match[str] | None:
        return self.compiled().fullmatch(string, *args)

    def search(self, string: str, *args: Any) -> re.Match[str] | None:
        return self.compiled().search(string, *args)

    def findall(self, string: str, *args: Any) -> list[Any]:
        return self.compiled().findall(string, *args)

    def finditer(self, string: str, *args: Any) -> Any:
        return self.compiled().finditer(string, *args)

    def sub(self, repl: Any, string: str, count: int = 0) -> str:
        return self.compiled().sub(repl, string, count)

    def subn(self, repl: Any, string: str, count: int = 0) -> tuple[str, int]:
        return self.compiled().subn(repl, string, count)

    def split(self, string: str, maxsplit: int = 0) -> list[Any]:
        return self.compiled().split(string, maxsplit)

    def __repr__(self) -> str:
        return f"lazy({self.pattern!r})"


def lazy(pattern: str, flags: int = 0) -> LazyPattern:
    """A pattern compiled on first use (see the module docstring)."""
    return LazyPattern(pattern, flags)
