"""Compose the laws into a plan.  Pure: a resolved request in, a frozen MemoryPlan out.

Order of operations, as vLLM 0.33.0 runs startup (vllm/v1/worker/gpu_worker.py):
device and communicator first (outside the budget), the budget from the CUDA total, weights,
the profile run's activation peak and non-torch growth, the CUDA-graph estimate (subtracted
where the release does so), the remainder as the KV pool, then blocks, tokens and
concurrency from the pool functions of vllm/v1/core/kv_cache_utils.py.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from vmemplan.laws.budget import available_kv_cache_bytes, requested_memory_bytes
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.model_config import dtype_bytes
from vmemplan.models.base import GraphContext
from vmemplan.resolve import ResolvedRequest
from vmemplan.result import (
    KvCacheSummary,
    KvGroup,
    MemoryPlan,
    PerRank,
    Provenance,
    Verdict,
)
from vmemplan.units import format_gib

__all__ = ["plan_memory"]


def _graph_context(req: ResolvedRequest, pp_rank: int) -> GraphContext:
    return GraphContext(
        tensor_parallel_size=req.tensor_parallel_size,
        pipeline_parallel_size=req.pipeline_parallel_size,
        pipeline_rank=pp_rank,
        block_size=req.block_size,
        cache_dtype=req.kv_cache_dtype,
        model_dtype=req.dtype,
        sm_major=req.gpu.sm_major,
        max_model_len=req.max_model_len,
        enable_prefix_caching=req.enable_prefix_caching,
        max_num_batched_tokens=req.max_num_batched_tokens,
        max_num_seqs=req.max_num_seqs,
        quantization=req.inputs.quantization,
        data_parallel_size=req.inputs.data_parallel_size or 1,
        enable_expert_parallel=bool(req.inputs.enable_expert_parallel),
        enable_eplb=bool(req.inputs.enable_eplb),
        num_redundant_experts=req.inputs.num_redundant_experts or 0,
        decode_context_parallel_size=req.inputs.decode_context_parallel_size or 1,
        **_mm_spec_fields(req),
    )


def _mm_spec_fields(req: ResolvedRequest) -> dict[str, Any]:
    """The multimodal and speculative-decoding fields of a GraphContext."""
    spec = getattr(req, "speculative", None)
    return {
        "limit_mm_per_prompt": getattr(req, "limit_mm_per_prompt", ()),
        "skip_mm_profiling": getattr(req, "skip_mm_profiling", False),
        "mm_encoder_tp_mode": getattr(req, "mm_encoder_tp_mode", "weights"),
        "num_speculative_tokens": spec.num_speculative_tokens if spec is not None else 0,
        "speculative_method": spec.method if spec is not None else None,
        "speculative_model_config": getattr(req, "draft_config", None),
    }


def _drafter(req: ResolvedRequest, ctx: GraphContext) -> tuple[list[Any], dict[str, Any]]:
    """The drafter's weight tensors and KV specs on this rank (vmemplan/laws/speculative.py)."""
    from vmemplan.laws import speculative as spec_law

    spec = getattr(req, "speculative", None)
    if spec is None:
        return [], {}
    draft = getattr(req, "draft_config", None)
    return (spec_law.drafter_weight_tensors(spec, req.config, ctx, draft),
            spec_law.drafter_kv_specs(spec, req.config, ctx, draft))


def _pool_context(req: ResolvedRequest) -> Any:
    from vmemplan.laws.kv_pool import PoolContext

    kv = req.rules.kv_cache
    return PoolContext(
        max_model_len=req.max_model_len,
        max_num_batched_tokens=req.max_num_batched_tokens,
        # window/chunked admission reserves every batch in flight only from 0.33
        async_scheduling=bool(req.rules.defaults.async_scheduling.value)
        and kv.window_in_flight == "max_concurrent_batches",
        disable_hybrid_kv_cache_manager=req.adapter.disables_hybrid_kv_cache_manager(
            _graph_context(req, 0), _version_tuple(req.vllm_version)),
        hybrid_group_threshold=kv.hybrid_group_threshold,
        tokens_formula=kv.tokens_formula,
        pipeline_parallel_size=req.pipeline_parallel_size,
        kv_cache_layout=req.adapter.kv_cache_layout(_graph_context(req, 0)),
        num_speculative_tokens=_mm_spec_fields(req)["num_speculative_tokens"],
        decode_context_parallel_size=req.inputs.decode_context_parallel_size or 1,
    )


def activation_hidden_buffers(cost: Any, version: str, engine: str) -> float:
    return float(cost.activation_constants(version, engine=engine).dense_hidden_buffers)


def activation_intermediate_buffers(cost: Any, version: str, engine: str) -> float:
    return float(cost.activation_constants(version, engine=engine).dense_intermediate_buffers)


def _version_tuple(version: str) -> tuple[int, ...] | None:
    from vmemplan.rules import parse_version

    try:
        return parse_version(version)
    except Exception:  # a version the rules packs accepted parses; stay safe
        return None


def plan_memory(req: ResolvedRequest) -> MemoryPlan:
    """Plan one deployment.  Reports the fullest rank, since its memory runs out first."""
    from vmemplan.model_config import config_value_guard

    with config_value_guard(req.source.model_id):
        return _plan_memory(req)


def _plan_memory(req: ResolvedRequest) -> MemoryPlan:
    from vmemplan.laws import activation as act_law
    from vmemplan.laws import overhead as oh_law
    from vmemplan.laws.kv_pool import UngroupableSpecs, plan_pool_multi_worker

    cfg = req.config
    adapter = req.adapter
    rules = req.rules
    cost = req.registry.cost_model
    engine_kind = rules.engine
    version = req.vllm_version
    config_ref = req.source.path or req.source.model_id
    if req.source.source == "bundled" and req.source.path:
        # a stable name, not this installation's absolute path
        config_ref = "registry/models/" + req.source.path.replace("\\", "/").rsplit("/", 1)[-1]
    prov: list[Provenance] = [Provenance(
        "model.config", config_ref, "given",
        f"{req.source.source} config.json" + (f" ({'; '.join(req.source.notes)})" if req.source.notes else ""))]
    warnings = list(req.warnings)
    width = dtype_bytes(req.dtype)
    tp, pp = req.tensor_parallel_size, req.pipeline_parallel_size

    # --- weights, per pipeline stage -------------------------------------------------
    stages = []
    for stage in range(pp):
        ctx = _graph_context(req, stage)
        wb = weight_bytes_per_rank(adapter.weight_tensors(ctx) + _drafter(req, ctx)[0], model_dtype=req.dtype,
                                   scheme=req.quant_scheme, allocator_rounding=True)
        from vmemplan.laws.lora import lora_bytes_for  # --enable-lora: buffers loaded with the weights

        lora_bytes, lora_text = lora_bytes_for(req, ctx)
        if lora_bytes:
            from dataclasses import replace as _replace

            wb = _replace(wb, total_bytes=wb.total_bytes + lora_bytes, by_kind={**wb.by_kind, "lora": lora_bytes})
        from vmemplan.laws.offload import offloaded_bytes_for  # --cpu-offload-gb: weights left in host memory

        offload_bytes, offload_text = offloaded_bytes_for(req, ctx, adapter.weight_tensors(ctx))
        if offload_bytes:
            from dataclasses import replace as _replace

            wb = _replace(wb, total_bytes=wb.total_bytes - offload_bytes,
                          by_kind={**wb.by_kind, "cpu_offload": -offload_bytes})
        # EPLB's redundant expert copies (and its state buffers) are loaded with the weights but
        # reported apart, so that the total counts them once (vllm/distributed/eplb/eplb_state.py).
        eplb = weight_bytes_per_rank(adapter.eplb_tensors(ctx), model_dtype=req.dtype,
                                     scheme=req.quant_scheme, allocator_rounding=True).total_bytes
        stages.append((ctx, wb, eplb))
    scheme_text = req.quant_scheme.describe() if req.quant_scheme is not None else f"{req.dtype} (unquantized)"
    slack = max(w.total_bytes - w.unrounded_bytes for _, w, _ in stages)
    prov.append(Provenance("weights_bytes", max(w.total_bytes for _, w, _ in stages), "exact",
                           f"{adapter.__class__.__name__} tensors at {req.dtype}, sharded over tp={tp}, pp={pp} "
                           "(vllm/model_executor/models + vocab_parallel_embedding.py, 0.33.0); "
                           f"{'generic decoder fallback' if adapter.fidelity == 'generic' else 'architecture adapter'}; "
                           f"scheme: {scheme_text}; includes {slack:,} B of CUDA caching-allocator rounding "
                           "(2 MiB segments, c10/cuda/CUDACachingAllocator.cpp)"))
    if lora_text:
        prov.append(Provenance("weights_bytes.lora", lora_bytes, "exact", lora_text))
    if offload_text:
        prov.append(Provenance("weights_bytes.cpu_offload", -offload_bytes, "exact", offload_text))

    # --- activation peak (profile run) -----------------------------------------------
    # The dummy step's size: max_num_batched_tokens under chunked prefill; releases that
    # profiled at the context length use the larger of the two.
    profile_tokens = req.max_num_batched_tokens
    if rules.budget.profile_tokens == "max_model_len":
        profile_tokens = max(req.max_model_len, req.max_num_batched_tokens)
    extra_act, extra_src = adapter.extra_activation_bytes(
        stages[-1][0], max_num_batched_tokens=req.max_num_batched_tokens, max_num_seqs=req.max_num_seqs)
    activation = act_law.activation_peak_bytes(
        family=adapter.family, hidden_size=cfg.hidden_size, num_attention_heads=cfg.num_attention_heads,
        head_dim=cfg.head_dim, intermediate_size=adapter.intermediate_size, vocab_size=cfg.vocab_size,
        tensor_parallel_size=tp, max_num_batched_tokens=profile_tokens,
        max_num_seqs=req.max_num_seqs, dtype_bytes=width,
        constants=cost.activation_constants(version, engine=engine_kind, sampler_path=req.inputs.sampler),
        extra_model_buffers_bytes=extra_act,
    )
    if req.runner == "pooling":
        # A pooling (embedding, scoring) model's profile run ends in the pooler, not the
        # sampler (vllm/v1/worker/gpu_model_runner.py::GPUModelRunner._dummy_pooler_run): no
        # logits over the vocabulary; the largest pooling output is a vector per token, held in
        # fp32 after normalisation.  Estimated as batched tokens x hidden x (dtype + 4) bytes.
        pooler = profile_tokens * cfg.hidden_size * (width + 4)
        activation = activation.model_copy(update={
            "sampler_bytes": 0,
            "peak_bytes": max(activation.forward_bytes + activation.extra_model_bytes, pooler),
            "source": activation.source + "; pooling runner: the pooler replaces the sampler pass "
                      f"({profile_tokens:,} tokens x hidden {cfg.hidden_size} x {width + 4} B)"})
    mm = adapter.multimodal_profile(
        stages[-1][0], hidden_buffers=activation_hidden_buffers(cost, version, engine_kind),
        intermediate_buffers=activation_intermediate_buffers(cost, version, engine_kind))
    if mm is not None:
        from vmemplan.laws.multimodal import profile_peak_bytes

        activation = activation.model_copy(update={
            "peak_bytes": profile_peak_bytes(activation.peak_bytes, mm),
            "forward_bytes": profile_peak_bytes(activation.forward_bytes, mm)})
        prov.append(Provenance("activation_peak_bytes.multimodal", mm.encoder_activation_bytes + mm.encoder_cache_bytes,
                               "estimated", mm.source if mm.profiled else f"no encoder profile: {mm.skipped}"))
        if mm.budget.log_line():
            prov.append(Provenance("encoder_cache.budget_tokens", mm.budget.budget_tokens, "exact",
                                   mm.budget.log_line() + " (vllm/multimodal/encoder_budget.py)"))
    prov.append(Provenance("activation_peak_bytes", activation.peak_bytes, "estimated",
                           activation.source + (f"; model buffers: {extra_src}" if extra_act else "")
                           + (f"; peak = max(encoder, encoder cache + language model) ({mm.source})"
                              if mm is not None and mm.profiled else "")))

    # --- CUDA graphs -------------------------------------------------------------------
    cg_rules = rules.cuda_graphs
    if req.enforce_eager:
        capture_sizes: list[int] = []
        mode = "NONE"
    else:
        # pooling models capture piecewise graphs only (vllm/config/vllm.py, 0.33.0)
        mode = "PIECEWISE" if req.runner == "pooling" and cg_rules.default_mode != "NONE" else cg_rules.default_mode
        capture_sizes = cg_rules.capture_sizes(max_num_seqs=req.max_num_seqs,
                                               max_num_batched_tokens=req.max_num_batched_tokens,
                                               num_speculative_tokens=_mm_spec_fields(req)["num_speculative_tokens"])
    cg = oh_law.cuda_graph_bytes(mode=mode, capture_sizes=capture_sizes, max_num_seqs=req.max_num_seqs,
                                 constants=cost.cuda_graph_constants(), hidden_size=cfg.hidden_size,
                                 num_layers=cfg.num_hidden_layers, tensor_parallel_size=tp)
    subtract_cg = bool(cg_rules.estimate_subtracted_by_default) and mode != "NONE"
    cg_src = (f"{cg.method} estimate for mode {cg.mode}: graphs {cg.num_graphs}, largest {cg.largest_graph_tokens} "
              "(registry cost_model.yaml cuda_graphs)")
    prov.append(Provenance("cuda_graph_bytes", cg.total_bytes, "estimated",
                           f"{cg_src}; {'subtracted before the KV pool' if subtract_cg else 'captured after the pool is sized (outside the budget)'} "
                           f"in vLLM {rules.id}"))

    # --- before the budget, non-torch ---------------------------------------------------
    pre = oh_law.pre_budget_bytes(world_size=req.world_size, tensor_parallel_size=tp,
                                  pipeline_parallel_size=pp, constants=cost.pre_budget_constants())
    non_torch = oh_law.non_torch_bytes(world_size=req.world_size,
                                       nccl_inside_budget=rules.budget.nccl_inside_budget,
                                       constants=cost.non_torch_constants(version, engine=engine_kind))
    prov.append(Provenance("non_torch_bytes", non_torch, "estimated", "registry cost_model.yaml non_torch"))
    prov.append(Provenance("pre_budget_bytes", pre.total_bytes, "estimated",
                           "registry cost_model.yaml pre_budget (CUDA context, communicator, workspace)"))

    # --- budget and pool, per stage --------------------------------------------------
    total = req.gpu.total_memory_bytes
    requested = requested_memory_bytes(total, req.gpu_memory_utilization, rounding=rules.budget.requested_rounding)
    prov.append(Provenance("requested_memory_bytes", requested, "exact",
                           f"{rules.budget.requested_rounding}(total {total} × util {req.gpu_memory_utilization}) "
                           "(vllm/v1/worker/utils.py::request_memory)"))
    prov.append(Provenance("gpu.total_memory_bytes", total, "given",
                           f"registry gpus.yaml {req.gpu.id}: CUDA-reported total ({req.gpu.total_memory_evidence})"))
    ranks: list[PerRank] = []
    workers: list[tuple[dict[str, Any], int]] = []
    for ctx, wb, eplb in stages:
        last = ctx.pipeline_rank == pp - 1
        stage_act = activation.peak_bytes if last else activation.forward_bytes
        if req.kv_cache_memory_bytes is not None:
            avail = req.kv_cache_memory_bytes
        else:
            a = available_kv_cache_bytes(
                requested_bytes=requested, weights_bytes=wb.total_bytes + eplb, activation_peak_bytes=stage_act,
                non_torch_bytes=non_torch, cuda_graph_estimate_bytes=cg.total_bytes,
                subtract_cuda_graph=subtract_cg, formula=rules.budget.formula,
                pre_budget_bytes=pre.total_bytes,
            )
            avail = a.available_bytes
        fixed = wb.total_bytes + eplb + stage_act + cg.total_bytes
        ranks.append(PerRank(
            weights_bytes=wb.total_bytes, activation_peak_bytes=stage_act, cuda_graph_bytes=cg.total_bytes,
            eplb_bytes=eplb, comm_buffer_bytes=0, non_torch_bytes=non_torch, fixed_total_bytes=fixed,
            pre_budget_bytes=pre.total_bytes, requested_memory_bytes=requested,
            available_kv_cache_bytes=avail, cuda_graph_subtracted=subtract_cg,
            communicator_bytes=pre.communicator_bytes, cuda_context_bytes=pre.cuda_context_bytes,
            workspace_bytes=pre.workspace_bytes, rank=ctx.pipeline_rank * tp, stage=ctx.pipeline_rank,
        ))
        workers.append(({**adapter.kv_cache_specs(ctx), **_drafter(req, ctx)[1]}, max(avail, 0)))
    if req.kv_cache_memory_bytes is not None:
        prov.append(Provenance("available_kv_cache_bytes", req.kv_cache_memory_bytes, "given",
                               "--kv-cache-memory: vLLM skips the budget and uses this figure"))
    else:
        prov.append(Provenance("available_kv_cache_bytes", min(r.available_kv_cache_bytes for r in ranks),
                               "estimated", "requested − weights − activation peak − non-torch"
                               + (" − CUDA-graph estimate" if subtract_cg else "")))

    pool_ctx = _pool_context(req)
    try:
        pool = plan_pool_multi_worker(workers, pool_ctx)
    except UngroupableSpecs as exc:
        # The release's grouping rules cannot share one pool between these caches: keep each
        # at its own page (not a vLLM rule: vLLM would refuse to start) and say so.
        from vmemplan.laws.kv_pool import plan_pool_ungrouped

        specs, avail = min(workers, key=lambda w: w[1])
        pool = plan_pool_ungrouped(specs, avail, pool_ctx)
        warnings.append(f"vLLM's KV cache grouping cannot place these caches in one pool ({exc.message}); "
                        "each cache type is sized at its own page instead")
    fullest = min(ranks, key=lambda r: r.available_kv_cache_bytes)

    # --- verdict ------------------------------------------------------------------------
    verdict = Verdict(starts=True)
    if requested + pre.total_bytes > total and req.kv_cache_memory_bytes is None:
        verdict = Verdict(False, f"the budget ({format_gib(requested)} GiB) plus what vLLM holds before it "
                                 f"({format_gib(pre.total_bytes)} GiB) exceeds the GPU's {format_gib(total)} GiB: "
                                 "vLLM stops with 'Free memory on device … is less than desired GPU memory utilization'")
    elif fullest.weights_bytes > requested:
        verdict = Verdict(False, f"the weights ({format_gib(fullest.weights_bytes)} GiB per rank) do not fit the "
                                 f"budget ({format_gib(requested)} GiB)")
    elif fullest.available_kv_cache_bytes <= 0:
        verdict = Verdict(False, "No available memory for the cache blocks: the non-KV memory "
                                 f"exceeds the budget by {format_gib(-fullest.available_kv_cache_bytes)} GiB")
    elif not pool.fits_one_request:
        verdict = Verdict(False, f"one {req.max_model_len:,}-token request needs {format_gib(pool.needed_bytes)} GiB "
                                 f"of KV cache, more than the {format_gib(fullest.available_kv_cache_bytes)} GiB available",
                          pool.estimated_max_model_len)

    groups = tuple(KvGroup(**g) for g in pool.groups_summary())
    request_bytes = None
    if req.inputs.request_tokens:
        request_bytes = pool.request_bytes(req.inputs.request_tokens)
    kv = KvCacheSummary(
        bytes_per_token=pool.bytes_per_token,
        block_size=min((g.block_size for g in groups), default=req.block_size),
        page_size_bytes=pool.block_bytes,
        num_blocks=pool.num_blocks,
        tokens=pool.kv_cache_tokens,
        max_concurrency=pool.max_concurrency,
        groups=groups,
        sequence_fixed_bytes=pool.sequence_fixed_bytes(),
        sequence_admission_bytes=pool.sequence_admission_bytes(),
        request_bytes=request_bytes,
        request_tokens=req.inputs.request_tokens,
        needed_bytes=pool.needed_bytes,
        cache_dtype=req.kv_cache_dtype,
        no_bytes_per_token_reason=None if pool.bytes_per_token is not None else
        "; ".join(pool.notes) or "part of what a request holds does not grow with its length",
    )
    prov.append(Provenance("kv_cache.num_blocks", pool.num_blocks, "exact" if req.kv_cache_memory_bytes else "estimated",
                           "available // block bytes per layer group (vllm/v1/core/kv_cache_utils.py::get_num_blocks)"))
    prov.append(Provenance("kv_cache.tokens", pool.kv_cache_tokens, "exact" if req.kv_cache_memory_bytes else "estimated",
                           f"{rules.kv_cache.tokens_formula} ({rules.id})"))
    if pool.bytes_per_token is not None:
        prov.append(Provenance("kv_cache.bytes_per_token", pool.bytes_per_token, "exact",
                               "2 × max(1, kv_heads ÷ tp) × head_dim × cache dtype bytes × layers"))
    for note in pool.notes:
        prov.append(Provenance("kv_cache.groups", note, "exact", "vllm/v1/core/kv_cache_utils.py::get_kv_cache_groups"))

    engine = {
        "tensor_parallel_size": tp, "pipeline_parallel_size": pp,
        "max_model_len": req.max_model_len, "max_num_seqs": req.max_num_seqs,
        "max_num_batched_tokens": req.max_num_batched_tokens, "block_size": req.block_size,
        "kv_cache_dtype": req.kv_cache_dtype, "dtype": req.dtype,
        "gpu_memory_utilization": req.gpu_memory_utilization, "enforce_eager": req.enforce_eager,
        "enable_prefix_caching": req.enable_prefix_caching,
        "kv_cache_memory_bytes": req.kv_cache_memory_bytes,
        "cudagraph_mode": mode, "cudagraph_capture_sizes": len(capture_sizes), "runner": req.runner,
    }
    plan = MemoryPlan(
        model_id=req.source.model_id, model_source=req.source.source, architecture=cfg.architecture or cfg.model_type,
        gpu_id=req.gpu.id, gpu_name=req.gpu.name, gpu_total_memory_bytes=total,
        vllm_version=req.vllm_version, rules_pack=rules.id, engine=engine, defaulted=req.defaulted,
        per_rank=fullest, kv_cache=kv, verdict=verdict, provenance=tuple(prov), warnings=tuple(warnings),
        ranks=tuple(ranks) if pp > 1 else (), parameters=adapter.total_params(), pool=pool,
        notes=tuple(req.source.notes) + tuple(req.notes),
    )
    from vmemplan.render.vllm_log import log_lines

    return replace(plan, log_lines=tuple(log_lines(plan, rules)))

