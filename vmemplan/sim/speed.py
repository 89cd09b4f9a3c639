"""A roofline speed model for vLLM forward steps.  Every figure it produces is an estimate.

A step runs one forward pass over all the tokens the scheduler gave it.  Two ceilings bound it:

* compute: ``2 * active_params_per_rank * tokens`` FLOPs (two FLOPs per parameter per token;
  attention FLOPs ignored) at ``dense_flops * efficiency_compute``;
* memory: ``weight_bytes_per_rank + kv_tokens_read * kv_bytes_per_token_per_rank`` bytes read once
  at ``bandwidth * efficiency_bandwidth``.

Choice for a step that mixes prefill chunks and decodes: its time is
``max(compute time of ALL its tokens, memory time)``.  vLLM runs the mix as ONE forward pass
(vllm/v1/core/sched/scheduler.py::Scheduler.schedule builds a single batch), so the weights are
streamed once for everybody while the tensor cores work on all tokens; the two overlap, and the
slower one sets the pace (the roofline view).  Adding them instead would count the weight read
twice.  A pure prefill is therefore compute-bound and a pure decode memory-bound, as expected.

Tensor parallelism: the caller passes per-rank weight and KV bytes; compute is divided by the
number of ranks; each layer adds two all-reduces of ``tokens * hidden_size * bytes_per_element``
bytes, each costing ``latency + 2 (tp - 1) / tp * bytes / (link bandwidth * efficiency)`` (a ring
all-reduce moves that share of the buffer over each link).  All-reduce time is added, not
overlapped.

Mixture of experts: compute uses ``active_params`` (the experts a token actually visits); a decode
step is charged for reading ALL of ``weight_bytes_per_rank``.  That is exact for large batches,
where nearly every expert is visited, and pessimistic for a handful of requests.

Constants (efficiencies, all-reduce latency, default link speed) come from ``registry/speed.yaml``
through :func:`parse_speed_constants`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from vmemplan.core.errors import UsageError
from vmemplan.core.frozen import frozen
from vmemplan.sim.scheduler import weighted_percentiles

if TYPE_CHECKING:
    from vmemplan.registry_schema import SpeedConstants
    from vmemplan.sim.scheduler import Percentiles, SimResult

__all__ = [
    "GpuSpeed",
    "SpeedModelInputs",
    "compute_time_s",
    "memory_time_s",
    "allreduce_time_s",
    "step_time_s",
    "prefill_time_s",
    "decode_time_s",
    "LatencyRow",
    "latency_table",
    "TimedResult",
    "attach_timing",
]

@frozen
class GpuSpeed:
    """Peak figures of one GPU, in base units.

    ``interconnect_bytes_per_s`` is the PER-DIRECTION link bandwidth (half of a bidirectional
    datasheet figure); ``None`` means use the registry default.
    """

    bandwidth_bytes_per_s: float
    bf16_dense_flops: float
    fp8_dense_flops: float | None = None
    interconnect_bytes_per_s: float | None = None

    def __post_init__(self) -> None:
        for name in ("bandwidth_bytes_per_s", "bf16_dense_flops"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise UsageError(f"GPU {name} must be a positive number, not {v!r}")
        for name in ("fp8_dense_flops", "interconnect_bytes_per_s"):
            v = getattr(self, name)
            if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise UsageError(f"GPU {name} must be a positive number or None, not {v!r}")

    @classmethod
    def from_registry_figures(
        cls,
        memory_bandwidth_tbps: float,
        bf16_tflops: float,
        fp8_tflops: float | None = None,
        interconnect_gbps_bidirectional: float | None = None,
    ) -> GpuSpeed:
        """From registry/gpus.yaml units: TB/s (1e12 B/s), TFLOP/s, bidirectional GB/s (halved here)."""
        return cls(
            bandwidth_bytes_per_s=memory_bandwidth_tbps * 1e12,
            bf16_dense_flops=bf16_tflops * 1e12,
            fp8_dense_flops=None if fp8_tflops is None else fp8_tflops * 1e12,
            interconnect_bytes_per_s=(
                None if interconnect_gbps_bidirectional is None else interconnect_gbps_bidirectional * 1e9 / 2
            ),
        )


@frozen
class SpeedModelInputs:
    """What the speed model needs to know about the model on one rank.

    ``active_params`` counts the parameters one token passes through in the WHOLE model (all ranks;
    for MoE, shared plus routed-active experts); ``weight_bytes_per_rank`` is what one rank stores;
    ``kv_bytes_per_token_per_rank`` is one token's KV on one rank (all layers).
    ``compute_dtype`` picks the GPU's BF16 or FP8 dense peak.
    """

    active_params: float
    weight_bytes_per_rank: int
    kv_bytes_per_token_per_rank: int
    hidden_size: int
    num_layers: int
    tensor_parallel_size: int = 1
    compute_dtype: Literal["bf16", "fp8"] = "bf16"

    def __post_init__(self) -> None:
        if not (self.active_params > 0):
            raise UsageError(f"active_params must be positive, not {self.active_params!r}")
        if self.weight_bytes_per_rank < 0 or self.kv_bytes_per_token_per_rank < 0:
            raise UsageError("weight and KV bytes must not be negative")
        for name in ("hidden_size", "num_layers", "tensor_parallel_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise UsageError(f"{name} must be a positive integer, not {v!r}")
        if self.compute_dtype not in ("bf16", "fp8"):
            raise UsageError(f"compute_dtype must be 'bf16' or 'fp8', not {self.compute_dtype!r}")


def _flops(model: SpeedModelInputs, gpu: GpuSpeed) -> float:
    if model.compute_dtype == "fp8":
        if gpu.fp8_dense_flops is None:
            raise UsageError("this GPU has no FP8 tensor-core figure", hint="use compute_dtype='bf16'")
        return gpu.fp8_dense_flops
    return gpu.bf16_dense_flops


def compute_time_s(tokens: int, model: SpeedModelInputs, gpu: GpuSpeed, constants: SpeedConstants) -> float:
    """``2 * (active_params / tp) * tokens / (dense_flops * efficiency_compute)``."""
    per_rank = model.active_params / model.tensor_parallel_size
    return 2.0 * per_rank * tokens / (_flops(model, gpu) * constants.efficiency_compute)


def memory_time_s(kv_tokens_read: int, model: SpeedModelInputs, gpu: GpuSpeed, constants: SpeedConstants) -> float:
    """``(weight_bytes_per_rank + kv_tokens_read * kv_bytes_per_token_per_rank) / (bandwidth * efficiency)``."""
    moved = model.weight_bytes_per_rank + kv_tokens_read * model.kv_bytes_per_token_per_rank
    return moved / (gpu.bandwidth_bytes_per_s * constants.efficiency_bandwidth)


def allreduce_time_s(tokens: int, model: SpeedModelInputs, gpu: GpuSpeed, constants: SpeedConstants) -> float:
    """Tensor-parallel communication of one step; 0 with one rank.

    ``2 * num_layers * (latency + 2 (tp-1)/tp * tokens * hidden * bytes_per_element / (link * eff))``.
    """
    tp = model.tensor_parallel_size
    if tp <= 1 or tokens <= 0:
        return 0.0
    link = gpu.interconnect_bytes_per_s or constants.default_interconnect_bytes_per_s
    payload = tokens * model.hidden_size * constants.allreduce_bytes_per_element
    per_call = constants.allreduce_latency_s + 2.0 * (tp - 1) / tp * payload / (link * constants.efficiency_interconnect)
    return 2 * model.num_layers * per_call


def step_time_s(
    prefill_tokens: int,
    decode_requests: int,
    kv_tokens_read: int,
    model: SpeedModelInputs,
    gpu: GpuSpeed,
    constants: SpeedConstants,
) -> float:
    """One forward step: ``max(compute(prefill + decode tokens), memory(kv_tokens_read)) + all-reduce``.

    An empty step (no tokens) takes 0 s.
    """
    tokens = prefill_tokens + decode_requests
    if tokens <= 0:
        return 0.0
    return max(
        compute_time_s(tokens, model, gpu, constants),
        memory_time_s(kv_tokens_read, model, gpu, constants),
    ) + allreduce_time_s(tokens, model, gpu, constants)


def prefill_time_s(
    prompt_tokens: int,
    model: SpeedModelInputs,
    gpu: GpuSpeed,
    constants: SpeedConstants,
    *,
    max_num_batched_tokens: int | None = None,
) -> float:
    """TTFT of one prompt on an idle server: its chunks run one per step.

    Each chunk of at most ``max_num_batched_tokens`` tokens is a step with that many prefill tokens
    that reads the KV of everything up to the chunk's end.
    """
    if prompt_tokens < 1:
        raise UsageError("a prompt has at least one token")
    chunk = max_num_batched_tokens or prompt_tokens
    total = 0.0
    done = 0
    while done < prompt_tokens:
        n = min(chunk, prompt_tokens - done)
        done += n
        total += step_time_s(n, 0, done, model, gpu, constants)
    return total


def decode_time_s(
    context_tokens: int,
    model: SpeedModelInputs,
    gpu: GpuSpeed,
    constants: SpeedConstants,
    *,
    batch: int = 1,
) -> float:
    """One decode step (the inter-token latency) for ``batch`` requests of ``context_tokens`` each."""
    if batch < 1:
        raise UsageError("a decode step has at least one request")
    return step_time_s(0, batch, batch * context_tokens, model, gpu, constants)


@frozen
class LatencyRow:
    """One line of :func:`latency_table`: per-user ITL and aggregate output throughput."""

    batch: int
    itl_ms: float
    throughput_tokens_per_s: float


def latency_table(
    batch_sizes: Sequence[int],
    context_tokens: int,
    model: SpeedModelInputs,
    gpu: GpuSpeed,
    constants: SpeedConstants,
) -> tuple[LatencyRow, ...]:
    """Decode ITL and total output tokens/s for each batch size, every request at ``context_tokens``."""
    rows = []
    for b in batch_sizes:
        t = decode_time_s(context_tokens, model, gpu, constants, batch=b)
        rows.append(LatencyRow(batch=b, itl_ms=t * 1e3, throughput_tokens_per_s=b / t))
    return tuple(rows)


@frozen
class TimedResult:
    """A :class:`~vmemplan.sim.scheduler.SimResult` with wall-clock estimates (all estimates).

    ``ttft_ms`` runs from the start of a request's arrival step to the end of the step that produced
    its first token; ``itl_ms`` is the time between consecutive output tokens of a request (a
    preemption stall counts as one long gap); ``e2e_ms`` runs from arrival to the last token.
    Idle steps (nothing to run) take no time.
    """

    step_times_s: tuple[float, ...]
    total_time_s: float
    ttft_ms: Percentiles
    itl_ms: Percentiles
    e2e_ms: Percentiles
    output_tokens_per_s: float
    request_ttft_ms: tuple[float | None, ...]


def attach_timing(
    result: SimResult,
    model: SpeedModelInputs,
    gpu: GpuSpeed,
    constants: SpeedConstants,
) -> TimedResult:
    """Time every simulated step with :func:`step_time_s` and derive TTFT / ITL / end-to-end in ms."""
    s = result.series
    times = tuple(
        step_time_s(p, d, kv, model, gpu, constants) for p, d, kv in zip(s.prefill_tokens, s.decode_requests, s.kv_tokens_read)
    )
    ends = []
    clock = 0.0
    for x in times:
        clock += x
        ends.append(clock)

    def start_of(step: int) -> float:
        return ends[step - 1] if step > 0 else 0.0

    ttft: list[float | None] = []
    e2e: list[float] = []
    outputs = 0
    for r in result.requests:
        if r.first_token_step is None:
            ttft.append(None)
            continue
        ttft.append((ends[r.first_token_step] - start_of(r.arrival_step)) * 1e3)
        if r.finish_step is not None:
            e2e.append((ends[r.finish_step] - start_of(r.arrival_step)) * 1e3)
            outputs += r.output_tokens
    itl_pairs = [(times[t] * 1e3, n) for t, n in enumerate(s.single_step_tokens) if n]
    itl_pairs.extend(((ends[b] - ends[a]) * 1e3, 1) for a, b in result.long_itl_gaps)
    total = ends[-1] if ends else 0.0
    return TimedResult(
        step_times_s=times,
        total_time_s=total,
        ttft_ms=weighted_percentiles((v, 1) for v in ttft if v is not None),
        itl_ms=weighted_percentiles(itl_pairs),
        e2e_ms=weighted_percentiles((v, 1) for v in e2e),
        output_tokens_per_s=outputs / total if total > 0 else 0.0,
        request_ttft_ms=tuple(ttft),
    )
