"""What a scheduler simulation returns: per-request traces, per-step series, the result with its
timeline fold, and the nearest-rank percentiles they are summarised by.

:func:`vmemplan.sim.scheduler.simulate` builds these (and :mod:`vmemplan.sim.scheduler` re-exports
them); :mod:`vmemplan.sim.speed` adds wall-clock estimates to them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import field
from typing import TYPE_CHECKING

from vmemplan.core.errors import UsageError
from vmemplan.core.frozen import frozen

if TYPE_CHECKING:  # pragma: no cover
    from vmemplan.sim.scheduler import SimConfig

__all__ = ["Percentiles", "RequestTrace", "SimResult", "StepSeries", "TimelineBucket", "percentiles",
           "weighted_percentiles"]


@frozen
class Percentiles:
    """p50 / p90 / p99 of a sample (nearest-rank); all ``None`` for an empty sample."""

    p50: float | None
    p90: float | None
    p99: float | None


@frozen
class RequestTrace:
    """What happened to one request (steps are 0-based; ``None`` where it never got there)."""

    index: int
    arrival_step: int
    prompt_tokens: int
    output_tokens: int
    first_token_step: int | None
    finish_step: int | None
    num_preemptions: int

    @property
    def ttft_steps(self) -> int | None:
        """Steps from arrival to the first token, counting the step that produced it."""
        if self.first_token_step is None:
            return None
        return self.first_token_step - self.arrival_step + 1


@frozen
class StepSeries:
    """Per-step records, one entry per simulated step, as seen by the forward pass.

    ``running`` / ``waiting`` are the queue lengths after admission; ``pool_blocks_used`` is the
    occupancy after allocation and before this step's finishes return blocks.
    ``kv_tokens_read`` sums, over every scheduled request, its context after this step's tokens
    (computed + scheduled), i.e. the KV the attention touches.  ``single_step_tokens`` counts
    output tokens whose previous token came one step earlier (an inter-token gap of exactly one
    step); longer gaps are listed in :attr:`SimResult.long_itl_gaps`.
    """

    prefill_tokens: tuple[int, ...]
    decode_requests: tuple[int, ...]
    kv_tokens_read: tuple[int, ...]
    running: tuple[int, ...]
    waiting: tuple[int, ...]
    pool_blocks_used: tuple[int, ...]
    preemptions: tuple[int, ...]
    single_step_tokens: tuple[int, ...]


@frozen
class TimelineBucket:
    """A stretch of consecutive steps summarised for a terminal picture.

    Queue lengths and pool fraction are the maxima over the stretch; token counts are means per step.
    """

    first_step: int
    last_step: int
    running: int
    waiting: int
    pool_fraction: float
    prefill_tokens: float
    decode_tokens: float


@frozen
class SimResult:
    """The outcome of :func:`simulate`."""

    config: SimConfig
    num_requests: int
    steps: int
    preemptions: int
    peak_running: int
    peak_pool_blocks_used: int
    peak_pool_fraction: float
    completed: int
    finished_all: bool
    requests: tuple[RequestTrace, ...]
    ttft_steps: Percentiles
    itl_steps: Percentiles
    series: StepSeries = field(repr=False)
    long_itl_gaps: tuple[tuple[int, int], ...] = field(repr=False)

    def timeline(self, num_buckets: int = 60) -> tuple[TimelineBucket, ...]:
        """The step series folded into at most ``num_buckets`` consecutive stretches."""
        if num_buckets < 1:
            raise UsageError("num_buckets must be at least 1")
        n = self.steps
        if n == 0:
            return ()
        s = self.series
        usable = self.config.usable_blocks
        size = -(-n // num_buckets)
        out = []
        for start in range(0, n, size):
            end = min(n, start + size)
            width = end - start
            out.append(
                TimelineBucket(
                    first_step=start,
                    last_step=end - 1,
                    running=max(s.running[start:end]),
                    waiting=max(s.waiting[start:end]),
                    pool_fraction=max(s.pool_blocks_used[start:end]) / usable,
                    prefill_tokens=sum(s.prefill_tokens[start:end]) / width,
                    decode_tokens=sum(s.decode_requests[start:end]) / width,
                )
            )
        return tuple(out)


def percentiles(values: Iterable[float]) -> Percentiles:
    """Nearest-rank p50/p90/p99: the smallest value with at least p % of the sample at or below it."""
    return weighted_percentiles((v, 1) for v in values)


def weighted_percentiles(pairs: Iterable[tuple[float, int]]) -> Percentiles:
    """Nearest-rank p50/p90/p99 of a sample given as (value, count) pairs."""
    items = sorted((v, w) for v, w in pairs if w > 0)
    total = sum(w for _, w in items)
    if total == 0:
        return Percentiles(None, None, None)
    result = []
    for p in (50, 90, 99):
        rank = -(-p * total // 100)  # ceil(p/100 * total), at least 1
        rank = max(rank, 1)
        seen = 0
        for v, w in items:
            seen += w
            if seen >= rank:
                result.append(v)
                break
    return Percentiles(*result)
