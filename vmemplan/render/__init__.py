"""Renderers: a MemoryPlan in, text out.  One function per output format; no arithmetic
beyond unit conversion."""

from __future__ import annotations

from enum import Enum

__all__ = ["OutputFormat"]


class OutputFormat(str, Enum):
    table = "table"
    log = "log"
    json = "json"
    tree = "tree"
