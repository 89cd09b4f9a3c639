"""JSON output: the MemoryPlan contract, stable key names, integers in bytes."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["dumps"]


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
