"""Read real vLLM startup logs: parse their figures, cross-check them, explain each line.

``parse`` turns log text into frozen :class:`~vmemplan.explain.parse.Startup` records (one per
startup attempt in the file); ``explain`` adds plain-words explanations, arithmetic checks and
suggestions (rendered as text by :mod:`vmemplan.render.explain`).  Both are pure: text in, frozen values out.  Nothing here imports rich, typer or yaml at
module import time.
"""

from __future__ import annotations

from vmemplan.explain.explain import (
    Check,
    ExplainedLine,
    Report,
    Suggestion,
    explain,
    report_to_json,
)
from vmemplan.explain.parse import (
    Figures,
    LogLine,
    Startup,
    parse_log,
    read_log_bytes,
    split_corpus_header,
)

__all__ = [
    "Check",
    "ExplainedLine",
    "Figures",
    "LogLine",
    "Report",
    "Startup",
    "Suggestion",
    "explain",
    "parse_log",
    "read_log_bytes",
    "report_to_json",
    "split_corpus_header",
]
