"""Text rendering of explain-log reports: each recognised log line with its plain-words
explanation, then the checks, the suggestions and the what-ifs.

:mod:`vmemplan.explain.explain` returns frozen data (:class:`~vmemplan.explain.explain.Report`);
this module only formats it.  No arithmetic beyond unit conversion.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from vmemplan.units import GIB

if TYPE_CHECKING:
    from vmemplan.explain.explain import Report

__all__ = ["render_text"]


def _g(n: int | float | None) -> str:
    """Bytes as a GiB string with 2 decimals."""
    if n is None:
        return "?"
    return f"{n / GIB:.2f}"


def _short(text: str, width: int = 220) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def render_text(report: Report | Sequence[Report]) -> str:
    """Plain text: each recognised log line followed by its indented explanation, then the checks,
    then the suggestions.  Accepts one report or a list of them."""
    reports = list(report) if isinstance(report, Sequence) else [report]
    out: list[str] = []
    for i, rep in enumerate(reports, 1):
        s = rep.startup
        head = f"Startup {i} of {len(reports)}" if len(reports) > 1 else "Startup"
        out.append(f"{head}: vLLM {s.vllm_version or '(version not in log)'}, format {s.format},"
                   f" model {s.model or '(not in log)'}, ranks {', '.join(map(str, s.ranks))}: {s.outcome}")
        if s.error:
            out.append(f"  error: {s.error}")
        out.append("")
        for ln in rep.lines:
            out.append(f"  {ln.number:>6}: {_short(ln.text)}")
            if ln.explanation:
                out.append(f"          {ln.explanation}")
        out.append("")
        out.append("Checks:")
        if not rep.checks:
            out.append("  (none: the log lacks the figures a check needs)")
        for c in rep.checks:
            where = f" (rank {c.rank})" if c.rank is not None else ""
            out.append(f"  [{'ok' if c.ok else '!!'}] {c.name}{where}: {c.detail}")
        out.append("")
        out.append("Suggestions:")
        if not rep.suggestions:
            out.append("  (nothing to act on)")
        for sg in rep.suggestions:
            out.append(f"  [{sg.severity}] {sg.detail}")
        out.append("")
        for w in rep.what_if:
            out.extend(_render_what_if(w))
    return "\n".join(out).rstrip() + "\n"


def _render_what_if(w: Mapping[str, Any]) -> list[str]:
    """The what-if block of :func:`render_text`, from its JSON mapping (see vmemplan.explain.whatif)."""
    changes = ", ".join(f"{k}={v}" for k, v in dict(w.get("changes", {})).items()) or "(no changes)"
    out = [f"What if {changes}:"]
    for step in w.get("steps", ()):
        out.append(f"  - {step}")
    if w.get("reason"):
        out.append(f"  cannot say: {w['reason']}")
    kv = w.get("available_kv_cache_bytes")
    tokens, conc, starts = w.get("kv_cache_tokens"), w.get("max_concurrency"), w.get("starts")
    parts = [f"available KV cache {_g(kv)} GiB" if kv is not None else "available KV cache ?"]
    parts.append(f"{tokens:,} tokens" if tokens is not None else "tokens ?")
    if conc is not None:
        parts.append(f"max concurrency {conc:.2f}x")
    if starts is not None:
        parts.append("starts" if starts else "does NOT start")
    out.append("  => " + ", ".join(parts))
    out.append("  measured (from the log): " + (", ".join(w.get("measured", ())) or "none"))
    out.append("  estimated: " + (", ".join(w.get("estimated", ())) or "none"))
    out.append("")
    return out
