"""Solving a sweep: the cheapest grid point that reaches a target (``vmemplan sweep --solve``).

A :class:`Target` says what a deployment must reach (concurrency at a request length, KV tokens);
:func:`solve` ranks the evaluated points of :mod:`vmemplan.sweep` and names the lever (the varied
flag) that moves the answer most.  Pure: it reads only the points it is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

from vmemplan.core.errors import UsageError
from vmemplan.core.frozen import frozen

if TYPE_CHECKING:
    from vmemplan.sweep import SweepPoint, Vary

__all__ = ["Lever", "SolveResult", "Target", "solve"]


# --------------------------------------------------------------------------------------
# Solve
# --------------------------------------------------------------------------------------


@frozen
class Target:
    """What a deployment must reach: at least ``min_concurrency`` requests of ``request_tokens``
    at once, and/or at least ``min_kv_tokens`` of KV cache."""

    min_concurrency: int | None = None
    request_tokens: int | None = None
    min_kv_tokens: int | None = None
    gate_on: str = "central"  # "low": read the error band's low end; a plan that may not start fails

    def __post_init__(self) -> None:
        if self.min_concurrency is None and self.min_kv_tokens is None:
            raise UsageError("no target: give --min-concurrency N (with --request-tokens L) or --min-kv-tokens N")
        if self.min_concurrency is not None and self.request_tokens is None:
            raise UsageError("--min-concurrency needs --request-tokens L (the request length it is counted at)")

    @property
    def metric(self) -> str:
        return "concurrency_at_request_tokens" if self.min_concurrency is not None else "kv_cache_tokens"

    def describe(self) -> str:
        parts = []
        if self.min_concurrency is not None:
            parts.append(f"at least {self.min_concurrency} requests of {self.request_tokens:,} tokens at once")
        if self.min_kv_tokens is not None:
            parts.append(f"at least {self.min_kv_tokens:,} tokens of KV cache")
        return " and ".join(parts)

    def met(self, p: SweepPoint) -> bool:
        if not p.starts or p.error:
            return False
        low = self.gate_on == "low"
        if low and p.outcome == "may_not_start":
            return False
        conc = p.concurrency_at_request_tokens
        tokens = p.kv_cache_tokens
        if low and p.kv_cache_tokens_low is not None:
            conc, tokens = p.concurrency_at_request_tokens_low, p.kv_cache_tokens_low
        if self.min_concurrency is not None and (conc or 0) < self.min_concurrency:
            return False
        if self.min_kv_tokens is not None and (tokens or 0) < self.min_kv_tokens:
            return False
        return True


@frozen
class Lever:
    """One single-flag change from the baseline point and what it does to the target figure."""

    flag: str
    from_value: Any
    to_value: Any
    before: float
    after: float
    meets: bool

    @property
    def gain(self) -> float:
        return self.after - self.before


@frozen
class SolveResult:
    target: Target
    answer: SweepPoint | None
    best: dict[str, Any]  # per varied flag: its best value among points that meet the target
    meeting: int
    levers: tuple[Lever, ...] = field(default=())

    @property
    def best_lever(self) -> Lever | None:
        return self.levers[0] if self.levers else None

    def to_json(self, varied: Sequence[str]) -> dict[str, Any]:
        return {
            "target": {"min_concurrency": self.target.min_concurrency, "request_tokens": self.target.request_tokens,
                       "min_kv_tokens": self.target.min_kv_tokens},
            "met": self.answer is not None,
            "points_meeting": self.meeting,
            "answer": self.answer.to_json(varied) if self.answer else None,
            "best": self.best,
            "levers": [{"flag": lv.flag, "from": lv.from_value, "to": lv.to_value, "before": lv.before,
                        "after": lv.after, "meets": lv.meets} for lv in self.levers],
        }


_ORDER = ("gpu", "tensor_parallel_size", "pipeline_parallel_size", "max_model_len", "gpu_memory_utilization",
          "kv_cache_memory_bytes")
_DIRECTION = {"tensor_parallel_size": "min", "pipeline_parallel_size": "min", "gpu_memory_utilization": "min",
              "kv_cache_memory_bytes": "min", "max_model_len": "max"}


def _rank(varies: Sequence[Vary]) -> Any:
    index = {v.flag.field: {val: i for i, val in enumerate(v.values)} for v in varies}
    fields = [f for f in _ORDER if f in index] + [v.flag.field for v in varies if v.flag.field not in _ORDER]

    def key(p: SweepPoint) -> tuple:
        out = []
        for f in fields:
            val = p.values[f]
            d = _DIRECTION.get(f)
            out.append(val if d == "min" else -val if d == "max" else index[f][val])
        return tuple(out)

    return key


def solve(points: Sequence[SweepPoint], varies: Sequence[Vary], target: Target) -> SolveResult:
    """Pick the preferred point meeting ``target`` (see the module docstring), each flag's best
    value among meeting points, and rank the single-flag levers from the first grid point."""
    meeting = [p for p in points if target.met(p)]
    key = _rank(varies)
    answer = min(meeting, key=key) if meeting else None
    best: dict[str, Any] = {}
    for v in varies:
        f = v.flag.field
        vals = [p.values[f] for p in meeting]
        if not vals:
            continue
        d = _DIRECTION.get(f)
        if d == "min":
            best[f] = min(vals)
        elif d == "max":
            best[f] = max(vals)
        else:
            order = {val: i for i, val in enumerate(v.values)}
            best[f] = min(vals, key=lambda x: order[x])
    metric = target.metric
    by_values = {tuple(p.values[v.flag.field] for v in varies): p for p in points}
    base_vals = tuple(v.values[0] for v in varies)
    base = by_values.get(base_vals)
    levers: list[Lever] = []
    if base is not None:
        before = float(base.output(metric) or 0) if base.starts else 0.0
        for i, v in enumerate(varies):
            best_lever = None
            for val in v.values[1:]:
                cand = by_values.get(base_vals[:i] + (val,) + base_vals[i + 1:])
                if cand is None:
                    continue
                after = float(cand.output(metric) or 0) if cand.starts else 0.0
                lv = Lever(v.flag.field, base_vals[i], val, before, after, target.met(cand))
                if best_lever is None or (lv.meets, lv.gain) > (best_lever.meets, best_lever.gain):
                    best_lever = lv
            if best_lever is not None:
                levers.append(best_lever)
        levers.sort(key=lambda lv: (lv.meets, lv.gain), reverse=True)
    return SolveResult(target=target, answer=answer, best=best, meeting=len(meeting), levers=tuple(levers))
