"""Error bands: how far the cost model's estimates have missed on real startup logs.

vLLM measures three of the figures between the budget and the KV pool (activation peak,
non-torch growth, CUDA-graph estimate); vmemplan estimates them (laws/activation.py,
laws/overhead.py), and the memory held before the budget too.  Their errors add up in one
place: the available KV cache.  A startup log prints that figure, so the corpus gives one
residual per log::

    residual = (predicted available − logged available) / requested budget

``bench/calibrate_bands.py`` plans every corpus case and writes the residuals, with the log,
release era and model family of each, to ``registry/bands.yaml``.  This module turns them into a
band around a plan's estimate, purely:

* the residuals of the plan's group (cost-model era × model family) are used when the group has
  at least ``min_logs`` logs; else those of its family over every era; else all of them (the
  level used is reported);
* ``exclude_log`` leaves one log out, so that ``bench/accuracy.py`` never lets a log calibrate
  its own band (leave-one-log-out);
* the half-width is the largest absolute residual of the chosen logs (a fraction of the budget),
  floored at ``floor_fraction`` (what the logs' 0.01-GiB rounding can resolve); the band on the
  available KV cache is ``estimate ± half_width × requested``.

The band on blocks, tokens and concurrency comes from re-sizing the same KV cache groups at the
two ends (:func:`kv_band`), and the verdict's tri-state from whether the low end still starts.
Exact figures (``--kv-cache-memory``) have no band.

Each estimated term has a band of its own too (:func:`term_band_width`): where a log prints the
term itself (the activation peak, the non-torch growth, the CUDA-graph memory), its residual on
that term is recorded beside the available-KV one, and the term's half-width is the largest of
those, chosen by the same group rule.  The available-KV band is not the sum of the term bands:
it is measured directly on the figure the terms add up to, where their errors partly cancel.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import field, replace
from typing import Any, Literal

from vmemplan.core.errors import RegistryInvalid
from vmemplan.core.frozen import frozen

__all__ = [
    "BandData",
    "BandResidual",
    "BandWidth",
    "KvBand",
    "Outcome",
    "band_width",
    "term_band_width",
    "term_bands",
    "TermBand",
    "TERMS",
    "kv_band",
    "low_end",
    "low_end_pool",
    "outcome_for",
    "parse_band_data",
]

Outcome = Literal["starts", "may_not_start", "does_not_start"]


@frozen
class BandResidual:
    """One corpus log's miss on the available KV cache."""

    log: str
    era: str
    family: str
    vllm_version: str
    residual_fraction: float  # (predicted − logged) / requested
    #: the same residual for each estimated term the log prints itself (term -> fraction)
    terms: Mapping[str, float] = field(default_factory=dict)


#: The estimated terms that may carry a band of their own (PerRank field names).
TERMS = ("activation_peak_bytes", "non_torch_bytes", "cuda_graph_bytes")


@frozen
class BandData:
    """The residuals the bands are drawn from, with their provenance (registry/bands.yaml)."""

    residuals: tuple[BandResidual, ...]
    min_logs: int
    floor_fraction: float
    source: str
    statistic: str
    excluded: tuple[tuple[str, str], ...] = ()  # (log, why it is outside the model's scope)


@frozen
class BandWidth:
    """The half-width for one group, and which logs set it."""

    half_width_fraction: float
    level: Literal["era_family", "family", "all", "none"]
    group: str
    logs: tuple[str, ...]


@frozen
class KvBand:
    """The band on one plan's KV figures; ``low`` and ``high`` are the ends of each range."""

    half_width_bytes: int
    available_kv_cache_bytes_range: tuple[int, int]
    num_blocks_range: tuple[int, int]
    tokens_range: tuple[int, int]
    max_concurrency_range: tuple[float, float]
    outcome: Outcome
    width: BandWidth
    # the pool law's result at the low end (what --gate-on low reads); not compared
    low_pool: Any = field(default=None, compare=False, repr=False)
    #: the estimated terms' own bands (activation peak, non-torch, CUDA graphs)
    terms: tuple[TermBand, ...] = ()

    def describe(self) -> str:
        w = self.width
        return (f"± {w.half_width_fraction:.2%} of the budget: largest residual of {len(w.logs)} corpus logs "
                f"({w.level.replace('_', ' × ')} group {w.group}; registry bands.yaml)")


def _float(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise RegistryInvalid(f"bands.yaml: {what} must be a number")
    return float(v)


def parse_band_data(data: Any) -> BandData:
    """Validate the parsed bands.yaml into :class:`BandData`."""
    if not isinstance(data, Mapping) or data.get("schema_version") != 1:
        raise RegistryInvalid("bands.yaml: expected a mapping with schema_version: 1")
    rows = data.get("residuals")
    if not isinstance(rows, list) or not rows:
        raise RegistryInvalid("bands.yaml: residuals must be a non-empty list")
    residuals = []
    for i, r in enumerate(rows):
        if not isinstance(r, Mapping) or not all(isinstance(r.get(k), str) for k in ("log", "era", "family")):
            raise RegistryInvalid(f"bands.yaml: residuals[{i}] needs log, era and family")
        raw_terms = r.get("terms") or {}
        if not isinstance(raw_terms, Mapping) or not set(raw_terms) <= set(TERMS):
            raise RegistryInvalid(f"bands.yaml: residuals[{i}].terms must map {', '.join(TERMS)} to numbers")
        terms = {str(k): _float(v, f"residuals[{i}].terms.{k}") for k, v in raw_terms.items()}
        residuals.append(BandResidual(r["log"], r["era"], r["family"], str(r.get("vllm_version", "")),
                                      _float(r.get("residual_fraction"), f"residuals[{i}].residual_fraction"),
                                      terms))
    for key in ("source", "statistic"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise RegistryInvalid(f"bands.yaml: {key} is required")
    excluded = tuple((str(e.get("log")), str(e.get("reason"))) for e in data.get("excluded") or ()
                     if isinstance(e, Mapping))
    min_logs = data.get("min_logs", 3)
    if not isinstance(min_logs, int) or min_logs < 1:
        raise RegistryInvalid("bands.yaml: min_logs must be a positive integer")
    return BandData(tuple(residuals), min_logs, _float(data.get("floor_fraction", 0.0), "floor_fraction"),
                    data["source"], data["statistic"], excluded)


#: widths already computed, per band data object (a sweep asks the same question per point):
#: (id(data), term, era, family, exclude_log) -> (data, width); the data is kept so its id stays its own
_WIDTHS: dict[tuple[int, str | None, str, str, str | None], tuple[BandData, BandWidth | None]] = {}


def band_width(data: BandData, *, era: str, family: str, exclude_log: str | None = None) -> BandWidth:
    """The half-width for a plan of cost-model era ``era`` and model family ``family``,
    leaving ``exclude_log`` out."""
    key = (id(data), None, era, family, exclude_log)
    hit = _WIDTHS.get(key)
    if hit is not None and hit[0] is data and hit[1] is not None:
        return hit[1]
    width = _width(data, [(r, r.residual_fraction) for r in data.residuals if r.log != exclude_log], era, family)
    _WIDTHS[key] = (data, width)
    return width


def term_band_width(data: BandData, term: str, *, era: str, family: str,
                    exclude_log: str | None = None) -> BandWidth | None:
    """The half-width for one estimated term (one of :data:`TERMS`), from the logs that print it;
    ``None`` when no log does."""
    key = (id(data), term, era, family, exclude_log)
    hit = _WIDTHS.get(key)
    if hit is not None and hit[0] is data:
        return hit[1]
    pool = [(r, r.terms[term]) for r in data.residuals if r.log != exclude_log and term in r.terms]
    width = _width(data, pool, era, family) if pool else None
    _WIDTHS[key] = (data, width)
    return width


def _width(data: BandData, pool: list[tuple[BandResidual, float]], era: str, family: str) -> BandWidth:
    choices: list[tuple[Literal["era_family", "family", "all"], str, list[tuple[BandResidual, float]]]] = [
        ("era_family", f"{era}/{family}", [p for p in pool if p[0].era == era and p[0].family == family]),
        ("family", family, [p for p in pool if p[0].family == family]),
        ("all", "all", pool),
    ]
    for level, group, rows in choices:
        if len(rows) >= data.min_logs or (level == "all" and rows):
            worst = max(abs(f) for _, f in rows)
            return BandWidth(max(worst, data.floor_fraction), level, group, tuple(r.log for r, _ in rows))
    return BandWidth(data.floor_fraction, "none", "none", ())


@frozen
class TermBand:
    """The band on one estimated term: ``estimate ± half_width`` (the low end floored at 0)."""

    term: str
    half_width_bytes: int
    range_bytes: tuple[int, int]
    width: BandWidth


def term_bands(data: BandData, estimates: Mapping[str, int], *, era: str, family: str,
               requested_bytes: int) -> tuple[TermBand, ...]:
    """A band for every estimated term some corpus log prints (``estimates``: term -> bytes)."""
    out = []
    for term in TERMS:
        if term not in estimates:
            continue
        width = term_band_width(data, term, era=era, family=family)
        if width is None:
            continue
        half = int(round(width.half_width_fraction * requested_bytes))
        est = estimates[term]
        out.append(TermBand(term, half, (max(0, est - half), est + half), width))
    return tuple(out)


def outcome_for(low_starts: bool, high_starts: bool) -> Outcome:
    """✔ only when even the low end starts; ✘ when even the high end fails."""
    if low_starts:
        return "starts"
    return "may_not_start" if high_starts else "does_not_start"


def kv_band(
    *,
    available_kv_cache_bytes: int,
    requested_bytes: int,
    width: BandWidth,
    resize: Any,
    central_starts: bool,
) -> KvBand:
    """The band on available KV, blocks, tokens and concurrency.

    ``resize(available_bytes)`` returns ``(num_blocks, tokens, max_concurrency, starts, pool)``
    for the plan's own KV cache groups at another available figure (the pool law, re-run); the
    ends are ``available ∓ half_width × requested``.
    """
    half = int(round(width.half_width_fraction * requested_bytes))
    low_b, high_b = available_kv_cache_bytes - half, available_kv_cache_bytes + half
    lo = resize(low_b)
    hi = resize(high_b)
    low_starts = bool(lo[3]) and central_starts
    high_starts = bool(hi[3]) or central_starts
    return KvBand(
        half_width_bytes=half,
        available_kv_cache_bytes_range=(low_b, high_b),
        num_blocks_range=(int(lo[0]), int(hi[0])),
        tokens_range=(int(lo[1]), int(hi[1])),
        max_concurrency_range=(float(lo[2]), float(hi[2])),
        outcome=outcome_for(low_starts, high_starts),
        width=width,
        low_pool=lo[4] if len(lo) > 4 else None,
    )


def low_end_pool(plan: Any) -> tuple[int, Any]:
    """The KV cache tokens and the pool at the plan's band's low end (the plan's own when its band
    kept no low-end pool); the plan must have a band."""
    return band_low_end(plan.band, plan.pool)


def band_low_end(band: KvBand, pool: Any) -> tuple[int, Any]:
    """:func:`low_end_pool` from the band and the central pool themselves."""
    if band.low_pool is None:
        return pool.kv_cache_tokens, pool
    return band.tokens_range[0], band.low_pool


def low_end(plan: Any) -> Any:
    """The plan as it would be at its band's low end (KV figures only), for gates that read the
    low end; the plan itself when it has no band."""
    band = getattr(plan, "band", None)
    if band is None or band.low_pool is None:
        return plan
    low = band.available_kv_cache_bytes_range[0]
    return replace(
        plan,
        per_rank=replace(plan.per_rank, available_kv_cache_bytes=low),
        kv_cache=replace(plan.kv_cache, num_blocks=band.num_blocks_range[0], tokens=band.tokens_range[0],
                         max_concurrency=band.max_concurrency_range[0]),
        pool=band.low_pool,
        band=None,
    )


def residual_fraction(predicted_bytes: float, logged_bytes: float, requested_bytes: float) -> float:
    """A log's residual: (predicted − logged) / requested."""
    return (predicted_bytes - logged_bytes) / requested_bytes


def within(band: Sequence[float], value: float) -> bool:
    """Whether ``value`` lies in ``[low, high]``."""
    return band[0] <= value <= band[1]
