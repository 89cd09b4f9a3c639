"""The a-priori plan of a logged startup: what ``vmemplan size`` would have predicted for the
command the log records in its ``non-default args: {...}`` line, set beside what the log measured.

It is information, never a check: a difference here is the estimate's error (or a flag vmemplan
does not model), and the plan's own provenance says which.  The command is read against the
release's argument table (:mod:`vmemplan.request.vllm_args`) and planned through the same
pipeline as ``size`` (:func:`vmemplan.request.engine.plan_for_command`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from vmemplan.core.errors import VmemplanError

if TYPE_CHECKING:
    from vmemplan.explain.model_link import ModelLink
    from vmemplan.explain.startup import Startup
    from vmemplan.registry import Gpu

__all__ = ["a_priori_plan", "ASSUMED_GPU"]

#: the GPU planned on when the log and the user name none (said in the result)
ASSUMED_GPU = "h100"

#: (row label, the log's Figures field, a function of the plan)
_ROWS: tuple[tuple[str, str, Any], ...] = (
    ("weights", "weights_bytes", lambda p: p.per_rank.weights_bytes),
    ("activation peak", "activation_peak_bytes", lambda p: p.per_rank.activation_peak_bytes),
    ("non-torch", "non_torch_bytes", lambda p: p.per_rank.non_torch_bytes),
    ("CUDA graphs (estimate)", "cuda_graph_estimate_bytes", lambda p: p.per_rank.cuda_graph_bytes),
    ("available KV cache", "available_kv_cache_bytes", lambda p: p.per_rank.available_kv_cache_bytes),
    ("blocks", "num_gpu_blocks", lambda p: p.kv_cache.num_blocks),
    ("KV cache tokens", "kv_cache_tokens", lambda p: p.kv_cache.tokens),
    ("max concurrency", "max_concurrency", lambda p: None if p.kv_cache.max_concurrency is None else round(p.kv_cache.max_concurrency, 2)),
)


def a_priori_plan(startup: Startup, *, link: ModelLink | None, gpu: Gpu | None,
                  vllm_version: str | None) -> Mapping[str, Any] | None:
    """``{"gpu", "gpu_assumed", "model", "rows": [{figure, log, plan, difference}], "starts",
    "warnings"}``, or ``{"reason": ...}`` when the command cannot be planned; ``None`` when the
    log records no command at all."""
    args = startup.engine.get("non_default_args") if isinstance(startup.engine, Mapping) else None
    if not args:
        return None
    from vmemplan.request.engine import engine_flags, plan_for_command
    from vmemplan.request.vllm_args import parse_non_default_args

    version = startup.vllm_version or vllm_version
    gpu_id = gpu.id if gpu is not None else ASSUMED_GPU
    try:
        parsed = parse_non_default_args(args, vllm_version=version)
        model = link.model_id if link is not None else None
        if not model:
            # the log parser keeps the args line's model apart (startup.model)
            named = parsed.model or startup.model
            if named:
                return {"reason": f"the logged model {named} is not available offline (bundled, local or in the "
                                  "Hugging Face cache); pass --model, or --online"}
            return {"reason": "the non-default args line names no model; pass --model"}
        flags = {**engine_flags(parsed)}
        if version is not None:
            flags.setdefault("vllm_version", version)
        plan, _ = plan_for_command(parsed, model=model, gpu=gpu_id, **flags)
    except VmemplanError as error:
        return {"reason": f"the logged command cannot be planned: {error.message}"}
    f = startup.figures
    rows = []
    for label, field, of_plan in _ROWS:
        logged = getattr(f, field, None)
        predicted = of_plan(plan)
        diff = predicted - logged if isinstance(logged, (int, float)) else None
        rows.append({"figure": label, "log": logged, "plan": predicted,
                     "difference": round(diff, 2) if isinstance(diff, float) else diff})
    return {"gpu": gpu_id, "gpu_assumed": gpu is None, "model": model, "vllm_version": plan.vllm_version,
            "rows": rows, "starts": plan.verdict.starts, "warnings": list(plan.warnings)}
