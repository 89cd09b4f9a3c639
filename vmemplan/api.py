"""The public Python API: plan a deployment, get the frozen result.

    >>> from vmemplan import plan
    >>> result = plan("meta-llama/Llama-3.1-8B", gpu="h100", gpu_memory_utilization=0.92,
    ...               max_model_len=32768)
    >>> result.kv_cache.tokens  # doctest: +SKIP

The CLI is one consumer of these functions.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.result import MemoryPlan

__all__ = ["plan", "plan_from_flags", "resolve_request", "plan_with_request", "SpeedSetup", "speed_setup",
           "concurrency_speed_rows"]


def resolve_request(*, spinner: bool = False, **flags: Any) -> Any:
    """Build :class:`~vmemplan.resolve.PlanInputs` from flags and resolve it."""
    from vmemplan.core.units import parse_bytes
    from vmemplan.resolve import PlanInputs, resolve

    kv_mem = flags.pop("kv_cache_memory", None)
    if isinstance(kv_mem, str):
        try:
            kv_mem = parse_bytes(kv_mem)
        except ValueError:
            raise UsageError(f"--kv-cache-memory {kv_mem!r} is not a byte count",
                             hint="write bytes, or a size such as 32G (2^30) or 32g (10^9)") from None
    if kv_mem is not None:
        flags["kv_cache_memory_bytes"] = kv_mem
    inputs = PlanInputs.from_flags({k: v for k, v in flags.items() if v is not None or k in ("model", "gpu")})
    progress = None
    if spinner:
        from vmemplan.render.progress import spinner as progress
    return resolve(inputs, progress=progress)


def plan_from_flags(**flags: Any) -> MemoryPlan:
    """Plan from vLLM-named flags (``gpu_memory_utilization=0.92``, ``kv_cache_memory="32G"``, …)."""
    from vmemplan.planner import plan_memory

    return plan_memory(resolve_request(**flags))


def plan(model: str, *, gpu: str, **flags: Any) -> MemoryPlan:
    """Plan serving ``model`` on ``gpu`` with vLLM's flags as keyword arguments."""
    return plan_from_flags(model=model, gpu=gpu, **flags)


def plan_with_request(**flags: Any) -> tuple[Any, MemoryPlan]:
    """:func:`plan_from_flags` that also returns the resolved request (adapter, GPU, registry)."""
    from vmemplan.planner import plan_memory

    req = resolve_request(**flags)
    return req, plan_memory(req)


class SpeedSetup:
    """What the roofline speed model needs for one plan, or why it cannot run.

    ``model`` / ``gpu`` / ``constants`` are :mod:`vmemplan.sim.speed` objects (``None`` with a
    ``reason`` when the GPU lacks bandwidth or TFLOP/s figures); ``notes`` say how each input was
    chosen.  Every figure built from it is an estimate."""

    def __init__(self, model: Any, gpu: Any, constants: Any, notes: tuple[str, ...], reason: str | None) -> None:
        self.model, self.gpu, self.constants, self.notes, self.reason = model, gpu, constants, notes, reason

    @property
    def ok(self) -> bool:
        return self.reason is None


def speed_setup(req: Any, plan: MemoryPlan) -> SpeedSetup:
    """Speed-model inputs for a resolved request and its plan: GPU peaks from registry/gpus.yaml
    (memory_bandwidth_tbps, bf16_tflops, fp8_tflops, interconnect), constants from
    registry/speed.yaml, active parameters from the adapter, per-rank weight and KV bytes from
    the plan."""
    from vmemplan.concurrency import active_parameters
    from vmemplan.sim.speed import GpuSpeed, SpeedModelInputs

    g = req.gpu
    constants = getattr(req.registry, "speed", None)
    if constants is None:
        return SpeedSetup(None, None, None, (), "the registry has no speed.yaml constants")
    if not g.memory_bandwidth_tbps or not g.bf16_tflops:
        return SpeedSetup(None, None, constants, (),
                          f"registry gpus.yaml lists no memory bandwidth or BF16 TFLOP/s for {g.id}")
    link = g.interconnect.gbps_bidirectional if g.interconnect is not None else None
    gpu = GpuSpeed.from_registry_figures(g.memory_bandwidth_tbps, g.bf16_tflops, g.fp8_tflops, link)
    active, how = active_parameters(req.adapter)
    kv = plan.kv_cache
    pool = plan.pool
    if kv.bytes_per_token is not None:
        kv_per_token = kv.bytes_per_token
    elif pool is not None:
        kv_per_token = int(pool.own_variable_bytes_per_token())
    else:
        kv_per_token = 0
    qc = req.config.quantization_config or {}
    fp8 = "fp8" in str(qc.get("quant_method", "")).lower() and g.fp8_tflops is not None
    model = SpeedModelInputs(
        active_params=float(active), weight_bytes_per_rank=plan.per_rank.weights_bytes,
        kv_bytes_per_token_per_rank=kv_per_token, hidden_size=req.config.hidden_size,
        num_layers=req.config.num_hidden_layers, tensor_parallel_size=req.tensor_parallel_size,
        compute_dtype="fp8" if fp8 else "bf16",
    )
    c = constants
    notes = (
        f"active parameters {active:,} ({how})",
        f"{g.id}: {g.memory_bandwidth_tbps} TB/s, {g.fp8_tflops if fp8 else g.bf16_tflops} "
        f"{'FP8' if fp8 else 'BF16'} TFLOP/s dense"
        + (f", link {link} GB/s bidirectional" if link else ""),
        f"efficiencies: compute {c.efficiency_compute}, bandwidth {c.efficiency_bandwidth}, "
        f"interconnect {c.efficiency_interconnect}; all-reduce latency {c.allreduce_latency_s * 1e6:g} µs "
        "(registry/speed.yaml)",
    )
    return SpeedSetup(model, gpu, constants, notes, None)


def concurrency_speed_rows(req: Any, plan: MemoryPlan, setup: SpeedSetup, reference_tokens: int,
                           prompt_tokens: int | None, mm_tokens: int = 0,
                           ) -> tuple[list[dict[str, Any]] | None, tuple[int, int] | None]:
    """The speed table of ``vmemplan concurrency`` (estimates) and its (context tokens, TTFT prompt
    tokens): decode ITL, output tokens/s and TTFT for batch sizes up to the concurrency at the
    reference length (capped at max_model_len); (None, None) when the speed model cannot run or
    vLLM would not start."""
    if not (setup.ok and plan.verdict.starts):
        return None, None
    from vmemplan.concurrency import concurrency_at
    from vmemplan.sim.speed import latency_table, prefill_time_s

    mml = req.max_model_len
    ctx_tokens = min(reference_tokens, mml)
    prompt_for_ttft = max(min(prompt_tokens or ctx_tokens, mml), 1) + (mm_tokens if prompt_tokens else 0)
    cap = max(concurrency_at(plan, ctx_tokens), 1)
    batches = sorted({b for b in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048) if b <= cap} | {cap})
    rows = latency_table(batches, ctx_tokens, setup.model, setup.gpu, setup.constants)
    speed_rows = [{"batch": r.batch, "itl_ms": r.itl_ms, "throughput_tokens_per_s": r.throughput_tokens_per_s,
                   "ttft_ms": prefill_time_s(r.batch * prompt_for_ttft, setup.model, setup.gpu, setup.constants,
                                             max_num_batched_tokens=req.max_num_batched_tokens) * 1e3}
                  for r in rows]
    return speed_rows, (ctx_tokens, prompt_for_ttft)
