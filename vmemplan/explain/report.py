"""The frozen results of explaining one startup: :class:`Check`, :class:`Suggestion`,
:class:`ExplainedLine` and :class:`Report` (with its JSON contract entry, schema_version 1)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from vmemplan.core.frozen import frozen
from vmemplan.explain.startup import FIGURE_JSON_KEYS, Figures, Startup

__all__ = ["SCHEMA_VERSION", "Binding", "Check", "ExplainedLine", "Report", "Suggestion", "report_to_json"]

SCHEMA_VERSION = 1


@frozen
class Check:
    """One cross-check between figures of the log; ``detail`` shows the arithmetic."""

    name: str
    ok: bool
    detail: str
    rank: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "ok": self.ok, "detail": self.detail}
        if self.rank is not None:
            out["rank"] = self.rank
        return out


@frozen
class Suggestion:
    """Something the user should act on (``severity`` "warning") or know ("info")."""

    name: str
    detail: str
    severity: str = "warning"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "severity": self.severity, "detail": self.detail}


@frozen
class ExplainedLine:
    number: int
    text: str
    kind: str
    rank: int | None
    explanation: str

    def to_json(self) -> dict[str, Any]:
        return {"number": self.number, "text": self.text, "explanation": self.explanation,
                "kind": self.kind, "rank": self.rank}


@frozen
class Binding:
    """The rank whose figures set every rank's pool, when it is not the primary rank (rank 0).

    vLLM gives every worker the smallest worker's block count (v1/core/kv_cache_planning.py::
    get_kv_cache_configs, step 5; V0: executor/distributed_gpu_executor.py::
    DistributedGPUExecutor.determine_num_available_blocks takes the min over workers), so with
    pipeline stages of unequal size the fullest stage, not rank 0, decides the pool.  ``basis``
    names the figure compared: ``kv_cache_tokens`` when the ranks printed their own pool sizes,
    else ``available_kv_cache_bytes``.
    """

    rank: int
    primary_rank: int
    basis: str

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "primary_rank": self.primary_rank, "basis": self.basis}


@frozen
class Report:
    startup: Startup
    lines: tuple[ExplainedLine, ...]
    checks: tuple[Check, ...]
    suggestions: tuple[Suggestion, ...]
    what_if: tuple[Mapping[str, Any], ...] = ()
    binding: Binding | None = None
    # what `vmemplan size` predicts for the command the log records (vmemplan/explain/apriori.py)
    a_priori: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``startups[i]`` entry of the JSON contract (schema_version 1)."""
        s = self.startup
        out: dict[str, Any] = {
            "vllm_version": s.vllm_version,
            "format": s.format,
            "model": s.model,
            "outcome": s.outcome,
            "error": s.error,
            "ranks": list(s.ranks),
            "figures": _figures_json(s.figures),
            "checks": [c.to_json() for c in self.checks],
            "lines": [ln.to_json() for ln in self.lines],
            "what_if": [dict(w) for w in self.what_if],
        }
        if len(s.ranks) > 1:
            out["per_rank"] = {str(r): _figures_json(f) for r, f in s.per_rank.items()}
            out["binding_rank"] = self.binding.to_json() if self.binding is not None else None
        out["suggestions"] = [x.to_json() for x in self.suggestions]
        out["preemptions"] = s.preemptions
        out["errors"] = list(s.errors)
        out["notes"] = list(s.notes)
        out["reached"] = s.reached
        out["first_line"] = s.first_line
        out["last_line"] = s.last_line
        out["printed"] = dict(s.figures.printed)
        out["stats"] = _json_safe(dict(s.stats))
        out["engine"] = _json_safe(dict(s.engine))
        out["a_priori"] = _json_safe(dict(self.a_priori)) if self.a_priori is not None else None
        return out


def _figures_json(f: Figures) -> dict[str, Any]:
    d = f.to_dict()
    out = {k: d[k] for k in FIGURE_JSON_KEYS}
    for k, v in d.items():
        if k not in out:
            out[k] = v
    return out


def _json_safe(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_json_safe(v) for v in value]
    return str(value)



def report_to_json(reports: Iterable[Report]) -> dict[str, Any]:
    """The whole JSON document: ``{"schema_version": 1, "startups": [...]}``."""
    return {"schema_version": SCHEMA_VERSION, "startups": [r.to_json() for r in reports]}
