"""Physical log lines -> logical records, and the process (rank) that printed each record.

A terminal that cut a long record into pieces is undone (a piece of 100+ characters followed by a
line that does not start a record is joined to it).  The process prefix vLLM's multiprocessing
executors print (``(VllmWorker TP1 pid=9)``, ``(Worker_PP1_TP0 pid=7)``, ``(VllmWorkerProcess
pid=27)``, ``(EngineCore_DP0 pid=5)``) names the rank.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["RECORD_START", "records", "process_key"]

_MSG_STARTS = (
    "Loading model weights|Model loading took|Memory profiling|the current vLLM instance|"
    "model weights take|GPU blocks|CUDA blocks|cuda blocks|Maximum concurrency|GPU KV cache size|"
    "[A-Z]+ KV cache size|Available KV cache|Graph capturing|The model's max seq len|"
    "To serve at least|Free memory on device|Estimated CUDA graph|Profiling CUDA graph|CUDA graph|"
    "vLLM |Initializing |Using max model len|Chunked prefill|non-default args|Sequence group|"
    "Avg prompt throughput|Engine \\d+|Starting to load model|torch\\.|RuntimeError|ValueError"
)
RECORD_START = re.compile(
    r"\s*(?:\(|\[|\d{4}-\d\d-\d\d|\d\d-\d\d \d\d:|(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b|"
    r"Traceback|File \"|[\w.]*(?:Error|Exception|Warning)\b|#|" + _MSG_STARTS + ")"
)
_WRAP_MIN = 100  # a piece this long, followed by a non-record line, was cut by a terminal
_WRAP_MAX_PIECES = 64


def records(lines: list[str], start: int) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    cur_num = 0
    parts: list[str] = []
    last_len = 0
    is_record = False
    n = len(lines)
    for idx in range(start, n):
        line = lines[idx]
        if (
            parts
            and is_record
            and last_len >= _WRAP_MIN
            and len(parts) < _WRAP_MAX_PIECES
            and line.strip()
            and not RECORD_START.match(line)
        ):
            parts.append(line)
            last_len = len(line)
            continue
        if parts:
            out.append((cur_num, parts[0] if len(parts) == 1 else "".join(parts)))
        cur_num = idx + 1
        parts = [line]
        last_len = len(line)
        is_record = bool(line) and bool(RECORD_START.match(line))
    if parts:
        out.append((cur_num, parts[0] if len(parts) == 1 else "".join(parts)))
    return out


# --------------------------------------------------------------------------------------------
# Process prefixes -> ranks
# --------------------------------------------------------------------------------------------

_PROC = re.compile(r"\(([A-Za-z][\w\-]*)((?:[ \t]+[^()\s]+?)*?)[ \t]+pid=(\d+)[^()]{0,80}\)[ \t]*")
_GRID = re.compile(r"(DP|PP|TP|EP|PCP|DCP)_?(\d+)")
_RANK_ATTR = re.compile(r"\brank=(\d+)")


def process_key(text: str) -> Any:
    """The rank key of the process that printed ``text``: ``None`` for engine/API/driver lines,
    ``("rank", n)``, ``("grid", ((axis, n), ...))`` or ``("pid", pid)`` for worker processes."""
    if "pid=" not in text[:300]:
        return None
    m = _PROC.search(text, 0, 300)
    if m is None:
        return None
    last = m
    pos = m.end()
    while True:
        m2 = _PROC.match(text, pos)
        if m2 is None:
            break
        last, pos = m2, m2.end()
    name, attrs, pid = last.group(1), last.group(2) or "", last.group(3)
    if "worker" not in name.lower():
        return None
    r = _RANK_ATTR.search(attrs)
    if r:
        return ("rank", int(r.group(1)))
    grid = tuple((a, int(b)) for a, b in _GRID.findall(name + " " + attrs))
    if grid:
        return ("grid", grid)
    return ("pid", int(pid))

