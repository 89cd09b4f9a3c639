"""Explain a parsed vLLM startup: plain-words notes per line, arithmetic cross-checks, advice.

Pure: a :class:`~vmemplan.explain.parse.Startup` in, a frozen :class:`Report` out (data only: the
text rendering is :func:`vmemplan.render.explain.render_text`).  Every check
states its arithmetic in ``detail`` and passes when the two sides agree "within the log's
rounding": each printed figure may be off by half a unit of its last printed decimal.

The checks are in :mod:`vmemplan.explain.checks`, the suggestions in
:mod:`vmemplan.explain.suggestions`, the line notes in :mod:`vmemplan.explain.line_notes`.
"""

from __future__ import annotations

from vmemplan.explain.checks import checks_for as _checks_for
from vmemplan.explain.line_notes import explain_line as _explain_line
from vmemplan.explain.report import (
    SCHEMA_VERSION,
    Binding,
    Check,
    ExplainedLine,
    Report,
    Suggestion,
    report_to_json,
)
from vmemplan.explain.startup import Figures, Startup, half_unit_bytes
from vmemplan.explain.suggestions import suggestions as _suggestions

__all__ = [
    "SCHEMA_VERSION",
    "Binding",
    "binding_rank",
    "Check",
    "ExplainedLine",
    "Report",
    "Suggestion",
    "explain",
    "report_to_json",
]


def explain(startup: Startup, *, bytes_per_token: int | None = None,
            model_weights_bytes: int | None = None, model_weights_slack_bytes: int = 0) -> Report:
    """Explain one parsed startup.

    ``bytes_per_token`` (KV bytes one token needs on one rank, all layers) enables the
    tokens-vs-bytes check; ``model_weights_bytes`` (predicted weights per rank) the weights check.
    """
    s = startup
    checks = _checks_for(s, s.figures, None, bytes_per_token, model_weights_bytes, model_weights_slack_bytes)
    seen = [s.figures]
    for r in s.ranks:
        f = s.per_rank.get(r)
        if f is None or r == s.primary_rank:
            continue
        if all(_differs(f, g) for g in seen):  # ranks with identical figures are checked once
            seen.append(f)
            checks += _checks_for(s, f, r, bytes_per_token, model_weights_bytes, model_weights_slack_bytes)
    lines = tuple(ExplainedLine(ln.number, ln.text, ln.kind, ln.rank, _explain_line(s, ln)) for ln in s.lines)
    return Report(startup=s, lines=lines, checks=tuple(checks), suggestions=tuple(_suggestions(s)),
                  binding=binding_rank(s))


def binding_rank(s: Startup) -> Binding | None:
    """The rank with the smallest pool when it is not the primary rank (see :class:`Binding`).

    Compared by the ranks' own token counts when they printed different ones, else by their
    available KV cache memory (ties go to the primary rank: it is then not reported).
    """
    primary = s.per_rank.get(s.primary_rank)
    if primary is None or len(s.per_rank) < 2:
        return None
    for basis in ("kv_cache_tokens", "available_kv_cache_bytes"):
        values = {r: getattr(f, basis) for r, f in s.per_rank.items() if getattr(f, basis) is not None}
        if len(values) < 2 or len(set(values.values())) < 2:
            continue
        rank = min(values, key=lambda r: (values[r], r != s.primary_rank, r))
        mine = getattr(primary, basis)
        if rank == s.primary_rank or mine is None:
            return None
        # a difference within the printed rounding of the two figures is no evidence
        rounding = half_unit_bytes(primary.printed.get(basis)) + half_unit_bytes(s.per_rank[rank].printed.get(basis))
        if mine - values[rank] <= rounding:
            return None
        return Binding(rank=rank, primary_rank=s.primary_rank, basis=basis)
    return None


_CHECKED = ("total_memory_bytes", "gpu_memory_utilization", "weights_bytes", "activation_peak_bytes",
            "non_torch_bytes", "available_kv_cache_bytes", "kv_cache_tokens", "max_concurrency",
            "requested_memory_bytes", "peak_torch_bytes", "consumed_bytes")


def _differs(a: Figures, b: Figures) -> bool:
    return any(getattr(a, n) != getattr(b, n) for n in _CHECKED)

