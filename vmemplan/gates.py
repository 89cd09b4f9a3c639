"""CI gates: targets a plan must meet (``--min-concurrency``, ``--min-kv-tokens``), as data.

A gate is evaluated once, here, and both the JSON (``gates: [{name, target, value, ok}]``) and
the exit code (3 when one is not met) read the same :class:`Gate`.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.frozen import frozen

__all__ = ["Gate", "evaluate_gates"]


@frozen
class Gate:
    """One target: ``value`` is what the plan reaches, ``ok`` whether it meets ``target``."""

    name: str  # the flag's name without dashes: min_concurrency, min_kv_tokens
    target: int
    value: int
    ok: bool
    request_tokens: int | None = None  # the request length a concurrency gate is counted at
    on: str = "central"  # "low": read at the error band's low end (--gate-on low)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "target": self.target, "value": self.value, "ok": self.ok}
        if self.request_tokens is not None:
            out["request_tokens"] = self.request_tokens
        if self.on != "central":
            out["on"] = self.on
        return out


def evaluate_gates(plan: Any, *, min_concurrency: int | None, min_kv_tokens: int | None,
                   request_tokens: int, gate_on: str = "central") -> tuple[Gate, ...]:
    """The gates given, in flag order.  A plan that does not start reaches 0 of everything.

    ``gate_on="low"`` reads the plan at its error band's low end (vmemplan/laws/bands.py::
    low_end); a plan that may not start there reaches 0."""
    from vmemplan.concurrency import concurrency_at

    starts = plan.verdict.starts
    if gate_on == "low":
        from vmemplan.laws.bands import low_end

        starts = starts and plan.verdict.outcome in (None, "starts")
        plan = low_end(plan)
    gates = []
    if min_concurrency is not None:
        have = concurrency_at(plan, request_tokens) if starts else 0
        gates.append(Gate("min_concurrency", min_concurrency, have, have >= min_concurrency, request_tokens,
                          gate_on))
    if min_kv_tokens is not None:
        have = plan.kv_cache.tokens if starts else 0
        gates.append(Gate("min_kv_tokens", min_kv_tokens, have, have >= min_kv_tokens, on=gate_on))
    return tuple(gates)


def log_check_failures(reports: Any) -> list[str]:
    """Why `explain-log --check` fails (empty: it passes): a startup the log shows failing, and
    every cross-check of the log's figures that does not hold."""
    out: list[str] = []
    for n, report in enumerate(reports, 1):
        where = f"startup {n}: " if len(reports) > 1 else ""
        s = report.startup
        if s.outcome == "failed":
            out.append(f"{where}the log shows a failed startup" + (f" ({s.error})" if s.error else ""))
        for c in report.checks:
            if not c.ok:
                rank = f" (rank {c.rank})" if c.rank is not None else ""
                out.append(f"{where}check {c.name}{rank} fails: {c.detail}")
    return out
