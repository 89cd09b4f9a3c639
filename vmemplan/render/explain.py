"""Text rendering of explain-log reports: each recognised log line with its plain-words
explanation, then the checks, the suggestions and the what-ifs.

:mod:`vmemplan.explain.explain` returns frozen data (:class:`~vmemplan.explain.explain.Report`);
this module only formats it.  No arithmetic beyond unit conversion.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from vmemplan.core.units import GIB

if TYPE_CHECKING:
    from vmemplan.explain.explain import Report
    from vmemplan.explain.report import Check
    from vmemplan.explain.startup import Figures

__all__ = ["render_text"]


def _g(n: int | float | None) -> str:
    """Bytes as a GiB string with 2 decimals."""
    if n is None:
        return "?"
    return f"{n / GIB:.2f}"


def wrap_lines(text: str, width: int) -> str:
    """Fit ``text`` to ``width`` columns without cutting anything: a long line continues on the
    next lines, indented four columns past its own indent (log lines keep every character;
    prose breaks between words where it can)."""
    import textwrap

    out: list[str] = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip(" ")))
        more = indent + "    "
        out.extend(textwrap.wrap(line, width=width, subsequent_indent=more, break_on_hyphens=False,
                                 drop_whitespace=True) or [line])
    return "\n".join(out)


def render_text(report: Report | Sequence[Report], width: int | None = None) -> str:
    """Plain text: each recognised log line followed by its indented explanation, then the checks,
    then the suggestions.  Accepts one report or a list of them.  With ``width``, every line is
    wrapped to it (:func:`wrap_lines`); nothing is ever cut."""
    if width is not None:
        return wrap_lines(render_text(report).rstrip("\n"), max(width, 40)) + "\n"
    reports = list(report) if isinstance(report, Sequence) else [report]
    out: list[str] = []
    for i, rep in enumerate(reports, 1):
        s = rep.startup
        head = f"Startup {i} of {len(reports)}" if len(reports) > 1 else "Startup"
        out.append(f"{head}: vLLM {s.vllm_version or '(version not in log)'}, format {s.format},"
                   f" model {s.model or '(not in log)'}, ranks {', '.join(map(str, s.ranks))}: {s.outcome}")
        if s.error:
            out.append(f"  error: {s.error}")
        if rep.binding is not None:
            out.extend(_render_binding(rep))
        out.append("")
        for ln in rep.lines:
            out.append(f"  {ln.number:>6}: {ln.text}")
            if ln.explanation:
                out.append(f"          {ln.explanation}")
        out.append("")
        out.extend(_section("Checks", [_check_row(c) for c in rep.checks],
                            "none: the log lacks the figures a check needs"))
        out.extend(_section("Suggestions", [f"  [{sg.severity}] {sg.detail}" for sg in rep.suggestions],
                            "nothing to act on"))
        if rep.a_priori is not None:
            out.extend(_render_a_priori(rep.a_priori))
        for w in rep.what_if:
            out.extend(_render_what_if(w))
    return "\n".join(out).rstrip() + "\n"


def _section(title: str, rows: list[str], empty: str) -> list[str]:
    """A titled block of the text report: its rows, or ``(empty)`` when it has none, then a blank line."""
    return [f"{title}:", *(rows or [f"  ({empty})"]), ""]


def _check_row(c: Check) -> str:
    where = f" (rank {c.rank})" if c.rank is not None else ""
    return f"  [{'ok' if c.ok else '!!'}] {c.name}{where}: {c.detail}"


def _cell(figure: str, value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float) and figure == "max concurrency":
        return f"{value:.2f}x"
    if figure in ("blocks", "KV cache tokens") or not isinstance(value, (int, float)):
        return f"{value:,}" if isinstance(value, int) else str(value)
    return f"{value / 2**30:.2f} GiB"


def _render_a_priori(a: Mapping[str, Any]) -> list[str]:
    """The a-priori block: what `vmemplan size` predicts for the logged command, beside the log."""
    if a.get("reason"):
        return ["A-priori plan of the logged command: " + str(a["reason"]), ""]
    gpu = f"{a['gpu']} (assumed: the log names no GPU; pass --gpu)" if a.get("gpu_assumed") else a["gpu"]
    out = [f"A-priori plan of the logged command (`vmemplan size` for {a['model']} on {gpu}, vLLM "
           f"{a['vllm_version']}; information, not a check):",
           f"  {'figure':<24} {'log':>16} {'a-priori':>16} {'difference':>16}"]
    for r in a.get("rows", ()):
        diff = r.get("difference")
        out.append(f"  {r['figure']:<24} {_cell(r['figure'], r.get('log')):>16} "
                   f"{_cell(r['figure'], r.get('plan')):>16} {_cell(r['figure'], diff):>16}")
    out.append("")
    return out


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


#: The figures shown side by side for the primary and the binding rank: (label, field, unit).
_BINDING_ROWS = (
    ("total GPU memory", "total_memory_bytes", "GiB"),
    ("weights", "weights_bytes", "GiB"),
    ("peak torch memory", "peak_torch_bytes", "GiB"),
    ("activation peak", "activation_peak_bytes", "GiB"),
    ("non-torch memory", "non_torch_bytes", "GiB"),
    ("available KV cache", "available_kv_cache_bytes", "GiB"),
    ("KV cache tokens", "kv_cache_tokens", "tokens"),
)


def _figure_text(f: Figures, name: str, unit: str) -> str:
    value = getattr(f, name)
    if value is None:
        return "-"
    if unit == "GiB":
        return f"{f.printed.get(name) or _g(value)} GiB"
    return f"{value:,}"


def _render_binding(rep: Report) -> list[str]:
    """The binding rank's figures next to the primary rank's (see vmemplan.explain.report.Binding)."""
    b, s = rep.binding, rep.startup
    assert b is not None
    first, bind = s.per_rank[b.primary_rank], s.per_rank[b.rank]
    what = "KV cache tokens" if b.basis == "kv_cache_tokens" else "available KV cache memory"
    out = [f"  binding rank: rank {b.rank} has the least {what}; vLLM gives every rank the smallest rank's"
           f" block count, so rank {b.rank}'s figures, not rank {b.primary_rank}'s, set the pool:"]
    rows = [(label, _figure_text(first, n, u), _figure_text(bind, n, u)) for label, n, u in _BINDING_ROWS
            if getattr(first, n) is not None or getattr(bind, n) is not None]
    head = (f"rank {b.primary_rank}", f"rank {b.rank} (binding)")
    w0 = max(len(head[0]), *(len(r[1]) for r in rows))
    out.append(f"    {'':<20} {head[0]:>{w0}}   {head[1]}")
    out.extend(f"    {label:<20} {a:>{w0}}   {c}" for label, a, c in rows)
    return out
