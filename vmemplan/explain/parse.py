"""Parse vLLM startup logs (0.5 .. 0.33.0) into frozen :class:`Startup` records.

Pure: text in, frozen values out.  Never raises on odd input: lines that are cut short, binary
garbage or formats we do not know are skipped.

The pipeline: text -> cleaned text (ANSI colours, CR, NUL removed) -> logical records
(:mod:`vmemplan.explain.records`: terminal wrapping joined, the printing process's rank) -> one
rule per line kind (:mod:`vmemplan.explain.line_rules`, the catalogue of vLLM's startup lines with
the vLLM file::function that prints each) writing figures into an accumulator -> frozen
:class:`Startup` records (:mod:`vmemplan.explain.freeze`), one per startup attempt.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable
from typing import Any

from vmemplan.explain.accumulator import Acc
from vmemplan.explain.freeze import freeze
from vmemplan.explain.line_handlers import Hit
from vmemplan.explain.line_rules import BOUNDARY_KINDS, rules_for
from vmemplan.explain.memory_lines import profiling_row
from vmemplan.explain.records import process_key, records
from vmemplan.explain.startup import FIGURE_JSON_KEYS, GIB, Figures, LogLine, Startup, half_unit_bytes

__all__ = [
    "Figures",
    "LogLine",
    "Startup",
    "parse_log",
    "read_log_bytes",
    "split_corpus_header",
    "half_unit_bytes",
    "FIGURE_JSON_KEYS",
    "GIB",
]

# --------------------------------------------------------------------------------------------
# Text clean-up and the corpus header
# --------------------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]?")


def _clean(text: str) -> str:
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text


def read_log_bytes(data: bytes) -> str:
    """Decode log bytes: UTF-8 (or UTF-16 with a BOM) with undecodable bytes replaced, ANSI colour
    codes removed, CRLF / CR turned into LF."""
    if data.startswith(codecs.BOM_UTF16_LE) or data.startswith(codecs.BOM_UTF16_BE):
        text = data.decode("utf-16", errors="replace")
    else:
        text = data.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    return _clean(text)


def _header_end(lines: list[str]) -> int:
    """Index of the line after a leading ``---`` ... ``---`` block, or 0 when there is none."""
    if not lines or lines[0].strip() != "---":
        return 0
    for i in range(1, min(len(lines), 400)):
        if lines[i].strip() == "---":
            return i + 1
    return 0


def _tiny_yaml(lines: list[str]) -> dict[str, Any]:
    """A forgiving reader for the simple YAML the corpus headers use (top-level ``key: value``
    and one level of indented ``key: value``); used only when PyYAML fails."""
    out: dict[str, Any] = {}
    current: str | None = None
    for raw in lines:
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        indented = raw[:1] in (" ", "\t")
        key, sep, value = raw.strip().partition(":")
        if not sep:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if indented and current is not None and isinstance(out.get(current), dict):
            out[current][key.strip()] = value
        elif not indented:
            current = key.strip()
            out[current] = value if value else {}
    return out


def split_corpus_header(text: str) -> tuple[dict[str, Any] | None, str]:
    """Split a leading YAML header (``---`` ... ``---``) from a corpus log.

    Returns ``(header_dict_or_None, body)``.  PyYAML is imported lazily; a header it cannot read
    falls back to a tiny line reader, never an exception.
    """
    lines = text.split("\n")
    end = _header_end(lines)
    if not end:
        return None, text
    head = lines[1 : end - 1]
    body = "\n".join(lines[end:])
    data: Any = None
    try:
        from vmemplan._yaml import safe_load_text  # lazy: keep module import light

        data = safe_load_text("\n".join(head))
    except Exception:  # noqa: BLE001 - any YAML problem falls back to the tiny reader
        data = None
    if not isinstance(data, dict):
        data = _tiny_yaml(head)
    return data, body


# --------------------------------------------------------------------------------------------
# Records -> rules -> accumulated startups
# --------------------------------------------------------------------------------------------


def _boundary(kinds: frozenset[str], text: str) -> str | None:
    for k in BOUNDARY_KINDS:
        if k in kinds:
            if k == "banner" and "\u2580\u2584\u2580" not in text:
                continue
            return k
    return None


def _unrecognised(acc: Acc, number: int, text: str) -> None:
    """A record no rule fired on: a row of an open multi-line block, or a worker we meet first."""
    acc.records.append((number, text))
    if acc.block is not None and not profiling_row(acc, number, text):
        acc.block = None
    if "orker" in text[:160]:  # a worker process we have not met yet still counts as a rank
        k = process_key(text)
        if k is not None and k not in acc.seen_keys:
            acc.seen_keys.append(k)


def _run(recs: Iterable[tuple[int, str]], split: bool = True) -> list[Acc]:
    accs: list[Acc] = []
    acc = Acc()
    for number, text in recs:
        rules = rules_for(text)
        if not rules:
            _unrecognised(acc, number, text)
            continue
        kinds = frozenset(r.kind for r in rules)
        if kinds != {"profres"}:
            acc.block = None
        b = _boundary(kinds, text) if split else None
        if b is not None:
            if acc.has_outcome:
                accs.append(acc)
                acc = Acc()
            if acc.started_by is None or (acc.started_by == "args" and b != "args"):
                acc.started_by = b
        acc.records.append((number, text))
        hit = Hit(number, text, process_key(text), kinds)
        try:
            for rule in rules:
                rule.handle(acc, hit)
        except (ValueError, OverflowError, IndexError, TypeError):  # a cut or garbled figure: skip
            continue
    accs.append(acc)
    return accs


def _is_orphan(acc: Acc) -> bool:
    return (not acc.has_memory and not acc.has_kv and not acc.errors and not acc.generic_errors
            and acc.started_by in ("args", "namespace", None))


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def parse_log(text: str) -> list[Startup]:
    """Every vLLM startup found in ``text`` (oldest first); ``[]`` when none is recognised.

    A leading corpus YAML header is skipped (line numbers still count it).  A new startup begins
    at "vLLM API server version", an engine-config line, the version banner or a new
    "non-default args" line once the current one already has KV-cache figures or an error; a
    trailing piece that only repeats arguments (a reordered paste) is folded back into the
    startup before it.
    """
    if not text:
        return []
    text = _clean(text)
    lines = text.split("\n")
    accs = _run(records(lines, _header_end(lines)))
    # fold orphan pieces (only arguments, no figures) into the startup before them
    merged: list[Acc] = []
    for acc in accs:
        if merged and _is_orphan(acc) and acc.lines:
            prev = merged.pop()
            again = _run(prev.records + acc.records, split=False)
            merged.append(again[0])
        else:
            merged.append(acc)
    return [freeze(a) for a in merged if a.lines]
