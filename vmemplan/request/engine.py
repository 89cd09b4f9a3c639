"""A parsed vLLM command -> vmemplan's engine flags, and the plan annotated with what it left out.

:func:`engine_flags` maps the arguments vmemplan models onto the keyword names of
:func:`vmemplan.api.plan_from_flags`; :func:`annotate_plan` adds a warning naming the flags
that move GPU memory but are not modelled, and marks the figures they would move as estimated.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from vmemplan.request.vllm_args import ParsedCommand

__all__ = ["engine_flags", "annotate_plan", "not_modelled_warning", "AFFECTED_FIGURES"]

#: vLLM dest -> vmemplan's keyword (same name unless listed).
_RENAMED = {"kv_cache_memory_bytes": "kv_cache_memory"}

#: The engine keywords vmemplan's planner takes (vmemplan/cli/_options.py::ENGINE_FLAGS).
_ENGINE_KEYS = (
    "gpu_memory_utilization", "max_model_len", "max_num_seqs", "max_num_batched_tokens", "block_size",
    "kv_cache_dtype", "dtype", "quantization", "tensor_parallel_size", "pipeline_parallel_size",
    "data_parallel_size", "enable_expert_parallel", "enable_eplb", "num_redundant_experts",
    "decode_context_parallel_size", "enforce_eager", "kv_cache_memory", "enable_prefix_caching",
    "speculative_config", "limit_mm_per_prompt", "skip_mm_profiling", "mm_encoder_tp_mode", "runner",
    "revision", "config_format", "gpu_total_memory", "gpu_memory_in_use",
    "enable_lora", "max_loras", "max_lora_rank", "lora_dtype", "fully_sharded_loras", "hf_overrides",
    "cpu_offload_gb", "disable_sliding_window", "num_gpu_blocks_override",
    "async_scheduling", "disable_hybrid_kv_cache_manager", "cudagraph_capture_sizes", "max_cudagraph_capture_size",
    "optimization_level", "compilation_config", "attention_backend",
    "mamba_cache_dtype", "mamba_ssm_cache_dtype", "mamba_block_size",
    "offload_backend", "offload_group_size", "offload_num_in_group", "offload_prefetch_step", "offload_params",
)


def engine_flags(parsed: ParsedCommand) -> dict[str, Any]:
    """The modelled arguments of ``parsed`` as :func:`~vmemplan.api.plan_from_flags` keywords."""
    out: dict[str, Any] = {}
    for dest, value in parsed.args.items():
        key = _RENAMED.get(dest, dest)
        if key in _ENGINE_KEYS and value is not None:
            out[key] = value
    # --language-model-only: every modality's limit is 0 (vllm/config/multimodal.py::
    # MultiModalConfig.get_limit_per_prompt, 0.33.0): no vision tower, no encoder profile
    if parsed.args.get("language_model_only"):
        out["limit_mm_per_prompt"] = {"image": 0, "video": 0, "audio": 0}
    # --spec-method / --spec-model / --spec-tokens: shorthands for --speculative-config
    # (vllm/engine/arg_utils.py, 0.33.0: merged into speculative_config)
    short = {k: parsed.args[f"spec_{s}"] for s, k in
             (("method", "method"), ("model", "model"), ("tokens", "num_speculative_tokens"))
             if parsed.args.get(f"spec_{s}") is not None}
    if short:
        spec = out.get("speculative_config")
        if isinstance(spec, str):
            import json

            spec = json.loads(spec)
        out["speculative_config"] = {**(spec or {}), **short}
    return out


#: Which figures a not-modelled argument moves, by its config group (every one ends in the pool).
AFFECTED_FIGURES: dict[str, tuple[str, ...]] = {
    "LoRAConfig": ("weights_bytes", "activation_peak_bytes"),
    "OffloadConfig": ("weights_bytes",),
    "CompilationConfig": ("cuda_graph_bytes",),
    "VllmConfig": ("cuda_graph_bytes", "activation_peak_bytes"),
    "ModelConfig": ("weights_bytes", "activation_peak_bytes", "kv_cache.bytes_per_token"),
    "CacheConfig": ("kv_cache.bytes_per_token", "kv_cache.groups"),
    "MultiModalConfig": ("weights_bytes", "activation_peak_bytes"),
    "SchedulerConfig": ("activation_peak_bytes", "cuda_graph_bytes"),
    "ParallelConfig": ("comm_buffer_bytes", "activation_peak_bytes"),
}
_POOL = ("available_kv_cache_bytes", "kv_cache.num_blocks", "kv_cache.tokens")


def not_modelled_warning(parsed: ParsedCommand) -> str | None:
    if not parsed.not_modelled:
        return None
    parts = [f"{name} ({parsed.reasons.get(name, 'moves GPU memory')})" for name in parsed.not_modelled]
    return ("not modelled: " + "; ".join(parts) + " — vLLM's memory moves with these flags but vmemplan's "
            "figures leave them out, so the affected figures are estimates")


def annotate_plan(plan: Any, parsed: ParsedCommand) -> Any:
    """``plan`` with the not-modelled flags named in its warnings and the figures they move
    marked estimated (the plan is frozen: a new one is returned)."""
    from vmemplan.request.vllm_args import load_arg_table

    warning = not_modelled_warning(parsed)
    notes = tuple(n for n in parsed.notes if n not in plan.warnings)
    listed = ()
    if parsed.no_memory_effect:
        listed = ("no memory effect (accepted, nothing to plan): " + ", ".join(parsed.no_memory_effect),)
    plan = replace(plan, notes=tuple(plan.notes) + listed)
    if warning is None and not notes:
        return plan
    table = load_arg_table(None if parsed.vllm_version is None else parsed.vllm_version)
    figures: set[str] = set(_POOL)
    flags_of: dict[str, list[str]] = {}
    for name in parsed.not_modelled:
        spec = table.by_string.get(name)
        group = spec.group if spec is not None else ""
        for fig in (*AFFECTED_FIGURES.get(group, ()), *_POOL):
            figures.add(fig)
            flags_of.setdefault(fig, []).append(name)
    provenance = []
    for p in plan.provenance:
        if p.figure in figures and p.kind != "given" and parsed.not_modelled:
            provenance.append(replace(p, kind="estimated",
                                      source=f"{p.source} [estimated: leaves out {', '.join(flags_of[p.figure])}]"))
        else:
            provenance.append(p)
    warnings = tuple(plan.warnings) + notes + ((warning,) if warning else ())
    return replace(plan, provenance=tuple(provenance), warnings=warnings)


def plan_for_command(parsed: ParsedCommand | None, **flags: Any) -> tuple[Any, str | None]:
    """Plan ``flags`` as :func:`vmemplan.api.plan_from_flags` does, plus what a whole vLLM command
    brings: ``--max-model-len auto``, the annotations of :func:`annotate_plan`, and vLLM's startup
    refusals (:mod:`vmemplan.request.refusals`).  Returns (plan, hint for a refusal or None)."""
    from vmemplan.api import plan_from_flags
    from vmemplan.request import refusals

    in_use = refusals.parse_size_flag("--gpu-memory-in-use", flags.get("gpu_memory_in_use")) or 0
    with _command_environment(parsed):
        if flags.get("max_model_len") == -1:
            plan = plan_auto_max_model_len(plan_from_flags, **flags)
        else:
            plan = plan_from_flags(**flags)
    if parsed is not None:
        args = parsed.args
        refusals.check_scheduler(
            max_num_batched_tokens=int(plan.engine.max_num_batched_tokens),
            max_num_seqs=int(plan.engine.max_num_seqs), max_model_len=int(plan.engine.max_model_len),
            chunked_prefill=args.get("enable_chunked_prefill") is not False,
            max_num_active_seqs=args.get("max_num_active_seqs"),
            long_prefill_token_threshold=args.get("long_prefill_token_threshold"))
        plan = annotate_plan(plan, parsed)
    hint = None
    override = flags.get("num_gpu_blocks_override")
    if (not plan.verdict.starts and override is not None
            and (plan.verdict.reason or "").startswith("No available memory for the cache blocks")):
        # the override's blocks less the null block must hold one request (get_kv_cache_configs, 0.33.0)
        per_request = int(plan.pool.blocks_per_request) if plan.pool is not None else 1
        hint = f"--num-gpu-blocks-override {per_request + 1} or more (one request's {per_request} blocks and the null block)"
    elif not plan.verdict.starts and (plan.verdict.reason or "").startswith("No available memory for the cache blocks"):
        # vllm/v1/core/kv_cache_planning.py (0.33.0): the budget holds no KV block at all; the
        # utilization that leaves the non-KV memory one more block is the fix
        import math

        r = plan.per_rank
        need = r.requested_memory_bytes - r.available_kv_cache_bytes + plan.kv_cache.page_size_bytes
        util = math.ceil(need / plan.gpu_total_memory_bytes * 100) / 100
        hint = (f"--gpu-memory-utilization {util:.2f} or more" if util <= 1 else
                "the model does not fit this GPU: quantize (-q fp8) or add GPUs (-tp)")
    if plan.verdict.starts:
        refusal = refusals.check_plan(plan, in_use_bytes=in_use)
        if refusal is not None:
            from vmemplan.result import Verdict

            plan = replace(plan, verdict=Verdict(False, refusal.message))
            hint = refusal.hint
    return plan, hint


#: Environment variables of a pasted command that change what vLLM accepts.
_HONOURED_ENV = ("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS")


def _command_environment(parsed: ParsedCommand | None) -> Any:
    """The pasted command's ``VAR=value`` prefixes that vmemplan's checks read
    (``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve ...``), set while planning."""
    import contextlib
    import os

    @contextlib.contextmanager
    def scope() -> Any:
        env = {k: v for k, v in (parsed.env if parsed is not None else {}).items() if k in _HONOURED_ENV}
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    return scope()


def plan_auto_max_model_len(plan_fn: Any, **flags: Any) -> Any:
    """``--max-model-len auto`` (or -1): the longest context one request can hold in the pool,
    as vllm/v1/core/kv_cache_planning.py::_auto_fit_max_model_len chooses it (0.33.0).

    vLLM profiles with the model's full length, then binary-searches the largest length whose
    one-request KV bytes fit the available memory; the pool itself does not change.  vmemplan
    plans with the full length; when one request does not fit, its estimate of that same search
    (the verdict's largest max_model_len that fits) is the length, and the plan is redone at it.
    The log line vLLM prints is added to the plan's log lines."""
    flags = {k: v for k, v in flags.items() if k != "max_model_len"}
    full = plan_fn(**flags)
    full_len = int(full.engine.max_model_len)
    # vLLM plans against the usable blocks: the available bytes less the null block the block
    # pool holds back (vllm/v1/core/kv_cache_planning.py, "Reserve the null block"), and logs them
    avail = int(full.per_rank.available_kv_cache_bytes) - int(full.kv_cache.page_size_bytes)
    override = flags.get("num_gpu_blocks_override")
    if override is not None:
        # the override replaces the available memory before auto-fit (get_kv_cache_configs, 0.33.0)
        avail = (int(override) - 1) * int(full.kv_cache.page_size_bytes)
    from vmemplan.core.units import format_gib

    if full.verdict.starts or full.verdict.max_model_len_that_fits is None:
        if not full.verdict.starts and full.per_rank.available_kv_cache_bytes <= 0:
            return replace(full, verdict=replace(full.verdict, reason=(
                "Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single token. "
                "Try increasing `gpu_memory_utilization`.")))
        line = (f"Auto-fit max_model_len: full model context length {full_len} fits in available KV cache memory "
                f"({format_gib(avail)} GiB GPU)")
        return replace(full, preface_log_lines=(line, *full.preface_log_lines))
    fit = int(full.verdict.max_model_len_that_fits)
    plan = plan_fn(**flags, max_model_len=fit)
    line = (f"Auto-fit max_model_len: reduced from {full_len} to {fit} to fit in available KV cache memory "
            f"({format_gib(avail)} GiB GPU)")
    return replace(plan, preface_log_lines=(line, *plan.preface_log_lines))


def plan_from_logged_args(non_default_args: str | dict[str, Any], *, gpu: str | None = None,
                          vllm_version: str | None = None, **extra: Any) -> tuple[Any, ParsedCommand]:
    """The a-priori plan of the command a startup log records in its ``non-default args: {...}``
    line (for ``explain-log`` to show beside the log's figures): the line read against the
    release's argument table, its modelled flags planned, the rest named as for a command."""
    from vmemplan.request.vllm_args import parse_non_default_args

    parsed = parse_non_default_args(non_default_args, vllm_version=vllm_version)
    if parsed.model is None:
        from vmemplan.core.errors import BadInput

        raise BadInput("the non-default args line names no model", hint="give the model with --model")
    flags = {**engine_flags(parsed), **extra}
    if vllm_version is not None:
        flags.setdefault("vllm_version", vllm_version)
    plan, _ = plan_for_command(parsed, model=parsed.model, gpu=gpu, **flags)
    return plan, parsed
