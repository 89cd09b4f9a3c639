"""vLLM's own refusals, with vLLM's own messages, and a hint naming the fix.

Each check mirrors a check vLLM 0.33.0 makes before or during startup (cited per function);
the message is vLLM's text with the figures filled in as vLLM fills them.  A flag combination
vLLM rejects while building its config is a :class:`~vmemplan.core.errors.UsageError` (exit 2); a
deployment that would stop during startup is a :class:`Refusal` the command turns into the
plan's verdict (exit 3).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.frozen import frozen
from vmemplan.core.units import GIB, format_gib, parse_bytes

__all__ = [
    "Refusal", "check_scheduler", "check_max_model_len", "check_tp_heads", "check_free_memory",
    "check_kv_cache_memory_bytes", "check_num_gpu_blocks_override", "check_plan", "parse_size_flag", "MAX_LEN_KEYS",
]


@frozen
class Refusal:
    """A startup vLLM would not finish: its message and what to change."""

    message: str
    hint: str


def parse_size_flag(flag: str, value: Any) -> int | None:
    """A byte size as ``--gpu-total-memory`` / ``--gpu-memory-in-use`` take it (``80G``,
    ``81559MiB``, ``24e9`` bytes as an int)."""
    if value is None or isinstance(value, int):
        return value
    try:
        return parse_bytes(str(value))
    except ValueError:
        raise UsageError(f"{flag} {value!r} is not a size",
                         hint="write bytes, or a size such as 24G or 24GiB (2^30) or 24g (10^9)") from None


# --- flag combinations (exit 2) ----------------------------------------------------------------

def check_scheduler(*, max_num_batched_tokens: int, max_num_seqs: int, max_model_len: int,
                    chunked_prefill: bool = True, max_num_active_seqs: int | None = None,
                    long_prefill_token_threshold: int | None = None) -> None:
    """vllm/config/scheduler.py::SchedulerConfig.verify_max_model_len (0.33.0)."""
    if max_num_batched_tokens < max_model_len and not chunked_prefill:
        raise UsageError(
            f"max_num_batched_tokens ({max_num_batched_tokens}) is smaller than max_model_len ({max_model_len}). "
            "This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM "
            "reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len.",
            hint=f"--max-num-batched-tokens {max_model_len} or more, or --max-model-len {max_num_batched_tokens}")
    if max_num_batched_tokens < max_num_seqs:
        raise UsageError(
            f"max_num_batched_tokens ({max_num_batched_tokens}) must be greater than or equal to "
            f"max_num_seqs ({max_num_seqs}).",
            hint=f"--max-num-batched-tokens {max_num_seqs} or more, or --max-num-seqs {max_num_batched_tokens} "
                 "or fewer (vLLM lowers its default max_num_seqs itself, never one you set)")
    if max_num_active_seqs is not None and max_num_active_seqs > max_num_seqs:
        raise UsageError(
            f"max_num_active_seqs ({max_num_active_seqs}) cannot be greater than max_num_seqs ({max_num_seqs}).",
            hint=f"--max-num-active-seqs {max_num_seqs} or fewer")
    if long_prefill_token_threshold is not None and long_prefill_token_threshold > max_model_len:
        raise UsageError(
            f"long_prefill_token_threshold ({long_prefill_token_threshold}) cannot be greater than the "
            f"max_model_len ({max_model_len}).",
            hint=f"--long-prefill-token-threshold {max_model_len} or less")


#: The config.json keys vLLM reads the context length from, in its order
#: (vllm/config/model.py::_get_and_verify_max_len, 0.33.0: the smallest present wins).
MAX_LEN_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                "max_sequence_length", "max_seq_length", "seq_len")


def check_max_model_len(max_model_len: int, derived: int, text_config: dict[str, Any] | None = None) -> None:
    """vllm/config/model.py::_get_and_verify_max_len (0.33.0): a user max_model_len above the
    model's, unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (or within config.json's model_max_length)."""
    if max_model_len <= derived:
        return
    cfg = text_config or {}
    model_max_length = cfg.get("model_max_length")
    if isinstance(model_max_length, int) and max_model_len <= model_max_length:
        return
    key = next((k for k in MAX_LEN_KEYS if cfg.get(k) == derived), "max_position_embeddings")
    if long_max_model_len_allowed():
        return
    raise UsageError(
        f"User-specified max_model_len ({max_model_len}) is greater than the derived max_model_len "
        f"({key}={derived} or model_max_length={model_max_length} in model's config.json). To allow overriding "
        "this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.",
        hint=f"--max-model-len {derived} or less (VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 risks NaNs past the trained "
             "length)")


def long_max_model_len_allowed() -> bool:
    """vLLM's VLLM_ALLOW_LONG_MAX_MODEL_LEN (vllm/envs.py: "1" or "true", any case)."""
    import os

    return os.environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "").strip().lower() in ("1", "true")


def check_tp_heads(total_num_attention_heads: int, tensor_parallel_size: int) -> None:
    """vllm/config/model.py::ModelConfig.verify_with_parallel_config (0.33.0)."""
    if total_num_attention_heads % tensor_parallel_size:
        divisors = [d for d in range(1, total_num_attention_heads + 1) if total_num_attention_heads % d == 0]
        nearby = [d for d in divisors if d <= 2 * tensor_parallel_size][-3:]
        raise UsageError(
            f"Total number of attention heads ({total_num_attention_heads}) must be divisible by tensor "
            f"parallel size ({tensor_parallel_size}).",
            hint=f"-tp must divide {total_num_attention_heads}: e.g. {', '.join(map(str, nearby))}")


# --- would not start (exit 3) ------------------------------------------------------------------

def check_free_memory(*, total_bytes: int, in_use_bytes: int, before_budget_bytes: int, util: float,
                      device: str = "cuda:0") -> Refusal | None:
    """vllm/v1/worker/utils.py::request_memory (0.33.0): the memory free at startup (after other
    processes' ``in_use_bytes`` and what this process holds before its snapshot) must cover
    ``ceil(total × util)``."""
    import math

    requested = math.ceil(total_bytes * util)
    free = total_bytes - in_use_bytes - before_budget_bytes
    if free >= requested:
        return None
    fits = max(0.0, math.floor(free / total_bytes * 100) / 100)
    return Refusal(
        f"Free memory on device {device} ({format_gib(free)}/{format_gib(total_bytes)} GiB) on startup is less "
        f"than desired GPU memory utilization ({util}, {format_gib(requested)} GiB). Decrease GPU memory "
        "utilization or reduce GPU memory used by other processes.",
        hint=(f"--gpu-memory-utilization {fits:.2f} or lower" if fits > 0 else "free the GPU first")
        + (f" (other processes hold {format_gib(in_use_bytes)} GiB)" if in_use_bytes else ""))


def check_kv_cache_memory_bytes(*, kv_cache_memory_bytes: int, non_kv_bytes: int, total_bytes: int,
                                in_use_bytes: int, before_budget_bytes: int) -> Refusal | None:
    """vllm/v1/worker/gpu_worker.py::Worker.determine_available_memory (0.33.0): with
    kv_cache_memory_bytes vLLM skips the budget and allocates that many bytes of KV cache after
    the profile run; when they do not fit beside the model the allocation runs out of memory."""
    free = total_bytes - in_use_bytes - before_budget_bytes
    if kv_cache_memory_bytes + non_kv_bytes <= free:
        return None
    room = max(0, free - non_kv_bytes)
    return Refusal(
        f"kv_cache_memory_bytes ({format_gib(kv_cache_memory_bytes)} GiB) plus the model's "
        f"{format_gib(non_kv_bytes)} GiB (weights, activations, CUDA graphs, non-torch) exceed the "
        f"{format_gib(free)} GiB free on the device: vLLM skips the gpu_memory_utilization budget with this flag, "
        "and allocating the KV cache fails with torch.OutOfMemoryError (CUDA out of memory)",
        hint=f"--kv-cache-memory-bytes {room // GIB}G or less" if room >= GIB else
        "the model alone fills the device: drop --kv-cache-memory-bytes, quantize, or add GPUs (-tp)")


def check_plan(plan: Any, *, in_use_bytes: int = 0) -> Refusal | None:
    """The startup refusals a finished plan can evaluate (free memory at startup, a
    kv_cache_memory_bytes that does not fit)."""
    r = plan.per_rank
    total = int(plan.gpu_total_memory_bytes)
    util = float(plan.engine.gpu_memory_utilization or 0)
    before = int(r.pre_budget_bytes)
    kv_bytes = plan.engine.kv_cache_memory_bytes
    if kv_bytes:
        non_kv = r.weights_bytes + r.activation_peak_bytes + r.cuda_graph_bytes + r.non_torch_bytes
        return check_kv_cache_memory_bytes(kv_cache_memory_bytes=int(kv_bytes), non_kv_bytes=int(non_kv),
                                           total_bytes=total, in_use_bytes=in_use_bytes,
                                           before_budget_bytes=before)
    refusal = check_free_memory(total_bytes=total, in_use_bytes=in_use_bytes, before_budget_bytes=before, util=util)
    ctx = plan.pool.ctx if plan.pool is not None else None
    if refusal is None and ctx is not None and ctx.num_gpu_blocks_override is not None:
        non_kv = r.weights_bytes + r.activation_peak_bytes + r.cuda_graph_bytes + r.non_torch_bytes
        refusal = check_num_gpu_blocks_override(
            override=int(ctx.num_gpu_blocks_override), block_bytes=int(plan.kv_cache.page_size_bytes),
            non_kv_bytes=int(non_kv), total_bytes=total, in_use_bytes=in_use_bytes, before_budget_bytes=before)
    return refusal


def check_num_gpu_blocks_override(*, override: int, block_bytes: int, non_kv_bytes: int, total_bytes: int,
                                  in_use_bytes: int, before_budget_bytes: int) -> Refusal | None:
    """vllm/v1/core/kv_cache_planning.py::get_kv_cache_configs (0.33.0): with
    num_gpu_blocks_override the pool is ``override x bytes per block`` whatever the profile left;
    vLLM allocates it (GPUModelRunner.initialize_kv_cache) and runs out of memory when it does not
    fit beside the model (the same room as :func:`check_kv_cache_memory_bytes`)."""
    pool_bytes = max(override, 0) * block_bytes
    free = total_bytes - in_use_bytes - before_budget_bytes
    if pool_bytes + non_kv_bytes <= free or block_bytes <= 0:
        return None
    room = max(0, free - non_kv_bytes) // block_bytes
    return Refusal(
        f"num_gpu_blocks_override ({override} blocks, {format_gib(pool_bytes)} GiB) plus the model's "
        f"{format_gib(non_kv_bytes)} GiB (weights, activations, CUDA graphs, non-torch) exceed the "
        f"{format_gib(free)} GiB free on the device: vLLM sizes the KV cache from the override, not the "
        "gpu_memory_utilization budget, and allocating it fails with torch.OutOfMemoryError (CUDA out of memory)",
        hint=f"--num-gpu-blocks-override {room} or fewer" if room > 1 else
        "the model alone fills the device: drop --num-gpu-blocks-override, quantize, or add GPUs (-tp)")
