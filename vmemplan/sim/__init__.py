"""The serving-side simulation: vLLM's scheduler loop over the KV block pool, synthetic traffic,
and a roofline speed model that turns scheduler steps into (estimated) milliseconds."""

from __future__ import annotations

from vmemplan.sim.scheduler import (
    Percentiles,
    RequestTrace,
    SimConfig,
    SimResult,
    StepSeries,
    TimelineBucket,
    simulate,
)
from vmemplan.sim.speed import (
    GpuSpeed,
    LatencyRow,
    SpeedModelInputs,
    TimedResult,
    attach_timing,
    decode_time_s,
    latency_table,
    prefill_time_s,
    step_time_s,
)
from vmemplan.sim.traffic import RequestSpec, Traffic, parse_arrival, parse_dist

__all__ = [
    "GpuSpeed",
    "LatencyRow",
    "Percentiles",
    "RequestSpec",
    "RequestTrace",
    "SimConfig",
    "SimResult",
    "SpeedModelInputs",
    "StepSeries",
    "TimedResult",
    "TimelineBucket",
    "Traffic",
    "attach_timing",
    "decode_time_s",
    "latency_table",
    "parse_arrival",
    "parse_dist",
    "prefill_time_s",
    "simulate",
    "step_time_s",
]
