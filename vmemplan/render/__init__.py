"""Renderers: a MemoryPlan in, text out.  One function per output format; no arithmetic
beyond unit conversion.

Each command has one output-format enum; its dispatch is exhaustive (``assert_never``), so a
format added to an enum and not rendered is a type error, and a value outside the enum is a
usage error (exit 2) before anything is planned.
"""

from __future__ import annotations

import sys
from enum import Enum

if sys.version_info >= (3, 11):
    from typing import assert_never
else:  # pragma: no cover - Python 3.10
    from typing_extensions import assert_never

__all__ = ["OutputFormat", "ConcurrencyFormat", "SweepFormat", "ListFormat", "assert_never"]


class OutputFormat(str, Enum):
    """`vmemplan size --format`."""

    table = "table"
    log = "log"
    json = "json"
    tree = "tree"


class ConcurrencyFormat(str, Enum):
    """`vmemplan concurrency --format`."""

    table = "table"
    json = "json"


class SweepFormat(str, Enum):
    """`vmemplan sweep --format`."""

    table = "table"
    csv = "csv"
    json = "json"


class ListFormat(str, Enum):
    """`vmemplan gpus --format` and `vmemplan models --format`."""

    table = "table"
    json = "json"
