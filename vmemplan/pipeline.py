"""The one pipeline every command goes through: named steps, each a pure function.

::

    resolved request ─► model_graph ─► overheads ─► budget ─► pool ─► verdict ─► assemble
                        (weights,      (activation,  (requested,  (groups,   (starts or    (MemoryPlan)
                         KV specs,      non-torch,    available    blocks,    why not)
                         per stage)     CUDA graphs,  per stage)   tokens)
                                        pre-budget)

``size`` and the API run every step (:func:`plan_memory`); ``sweep`` re-runs only the steps a
varied flag touches (a budget-only change starts at :func:`budget`); ``explain-log`` runs the same
steps for its model checks and what-ifs, with the log's measured figures substituted through
:class:`Measured`.  No other module composes these laws.

The order mirrors vLLM 0.33.0's startup (vllm/v1/worker/gpu_worker.py): device and communicator
first (outside the budget), the budget from the CUDA total (utils.py::request_memory), weights, the
profile run's activation peak and non-torch growth, the CUDA-graph estimate (subtracted where the
release applies it), the remainder as the KV pool, then blocks, tokens and concurrency.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from vmemplan.core.frozen import frozen
from vmemplan.core.graph import GraphContext
from vmemplan.core.records import evolve
from vmemplan.core.units import format_gib
from vmemplan.core.version import version_tuple_or_none
from vmemplan.laws.budget import available_kv_cache_bytes, profiles_memory, requested_memory_bytes
from vmemplan.laws.kv_pool import (
    PoolContext,
    PoolLayout,
    PoolPlan,
    UngroupableSpecs,
    plan_pool_ungrouped,
    pool_layout,
    size_pool,
)
from vmemplan.laws.weights import WeightBreakdown, weight_bytes_per_rank
from vmemplan.pipeline_overheads import (  # noqa: F401 (step 3, re-exported)
    Overheads,
    _num_speculative_tokens,
    cuda_graph_subtracted,
    overheads,
)
from vmemplan.plan_result import assemble, kv_band
from vmemplan.request.compilation import custom_ops_on
from vmemplan.result import MemoryPlan, PerRank, Provenance, Verdict

if TYPE_CHECKING:
    from vmemplan.resolve import ResolvedRequest

__all__ = [
    "Stage", "ModelGraph", "Overheads", "Measured", "Budget", "graph_context", "pool_context",
    "model_graph", "overheads", "cuda_graph_subtracted", "budget", "layout", "pool", "verdict", "assemble", "tail",
    "plan_memory", "with_budget_flags",
]


# --------------------------------------------------------------------------------------------
# Step 1: the request's engine contexts
# --------------------------------------------------------------------------------------------


def graph_context(req: ResolvedRequest, pp_rank: int = 0) -> GraphContext:
    """The engine settings a model adapter reads, for pipeline stage ``pp_rank``."""
    spec = req.speculative
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
        limit_mm_per_prompt=req.limit_mm_per_prompt,
        skip_mm_profiling=req.skip_mm_profiling,
        mm_encoder_tp_mode=req.mm_encoder_tp_mode,
        num_speculative_tokens=spec.num_speculative_tokens if spec is not None else 0,
        speculative_method=spec.method if spec is not None else None,
        speculative_model_config=req.draft_config,
        vllm_version=version_tuple_or_none(req.vllm_version),
        disable_sliding_window=bool(req.inputs.disable_sliding_window),
        mamba_cache_dtype=req.inputs.mamba_cache_dtype or "auto",
        mamba_ssm_cache_dtype=req.inputs.mamba_ssm_cache_dtype or "auto",
        rotary_custom_op=custom_ops_on(req),
    )


def _async_scheduling(req: ResolvedRequest) -> bool:
    chosen = req.inputs.async_scheduling
    return bool(req.rules.defaults.async_scheduling.value) if chosen is None else bool(chosen)


def _hybrid_manager_disabled(req: ResolvedRequest, ctx0: GraphContext) -> bool:
    """--disable-hybrid-kv-cache-manager is always respected; --enable-hybrid-kv-cache-manager keeps
    it on (resolve refuses where vLLM would not); unset, vLLM decides per model
    (vllm/config/vllm.py::VllmConfig.__post_init__, 0.33.0)."""
    chosen = req.inputs.disable_hybrid_kv_cache_manager
    auto = req.adapter.disables_hybrid_kv_cache_manager(ctx0, version_tuple_or_none(req.vllm_version))
    if chosen is None or (chosen is False and auto):  # an older release keeps its own choice (resolve warns)
        return auto
    return bool(chosen)


def pool_context(req: ResolvedRequest) -> PoolContext:
    """The settings the pool laws read, from the request and its release's rules."""
    kv = req.rules.kv_cache
    ctx0 = graph_context(req, 0)
    return PoolContext(
        max_model_len=req.max_model_len,
        max_num_batched_tokens=req.max_num_batched_tokens,
        # window/chunked admission reserves every batch in flight only from 0.33; --async-scheduling /
        # --no-async-scheduling replace the release's default (vllm/config/vllm.py::
        # VllmConfig.max_concurrent_batches: 2 with async scheduling on one stage, else the stages)
        async_scheduling=_async_scheduling(req) and kv.window_in_flight == "max_concurrent_batches",
        disable_hybrid_kv_cache_manager=_hybrid_manager_disabled(req, ctx0),
        hybrid_group_threshold=kv.hybrid_group_threshold,
        tokens_formula=kv.tokens_formula,
        pipeline_parallel_size=req.pipeline_parallel_size,
        kv_cache_layout=req.adapter.kv_cache_layout(ctx0),
        num_speculative_tokens=_num_speculative_tokens(req),
        decode_context_parallel_size=req.inputs.decode_context_parallel_size or 1,
        reserve_null_block=bool(kv.null_block),
        num_gpu_blocks_override=req.inputs.num_gpu_blocks_override,
    )


# --------------------------------------------------------------------------------------------
# Step 2: the model graph (weights and KV specs per pipeline stage)
# --------------------------------------------------------------------------------------------


@frozen
class Stage:
    """One pipeline stage's share of the model: its weights (and EPLB copies) and KV specs."""

    ctx: GraphContext
    weights: WeightBreakdown
    eplb_bytes: int
    kv_specs: Mapping[str, Any]


@frozen
class ModelGraph:
    """The model on this deployment's ranks: one :class:`Stage` per pipeline stage."""

    stages: tuple[Stage, ...]
    parameters: int
    provenance: tuple[Provenance, ...]

    @property
    def weights_bytes(self) -> int:
        """The fullest stage's weights (allocator-rounded, as "Model loading took" measures)."""
        return max(s.weights.total_bytes for s in self.stages)

    @property
    def unrounded_weights_bytes(self) -> int:
        return max(s.weights.unrounded_bytes for s in self.stages)


def _drafter(req: ResolvedRequest, ctx: GraphContext) -> tuple[list[Any], dict[str, Any]]:
    """The drafter's weight tensors and KV specs on this rank (vmemplan/models/drafters.py)."""
    from vmemplan.models import drafters as spec_law

    spec = req.speculative
    if spec is None:
        return [], {}
    if spec.method == "dspark" and not req.adapter.builds_drafter(spec.method):
        from vmemplan.core.errors import UsageError

        raise UsageError(f"drafter weights for method dspark are not modelled for {req.config.architecture}",
                         hint="DSpark is modelled where its drafter ships in the target checkpoint "
                              "(DeepSeek-V4.1); supported elsewhere: eagle, eagle3, mtp, draft_model, ngram")
    return (spec_law.drafter_weight_tensors(spec, req.config, ctx, req.draft_config),
            spec_law.drafter_kv_specs(spec, req.config, ctx, req.draft_config))


def _config_ref(req: ResolvedRequest) -> str:
    ref = req.source.path or req.source.model_id
    if req.source.source == "bundled" and req.source.path:
        # a stable name, not this installation's absolute path
        ref = "registry/models/" + req.source.path.replace("\\", "/").rsplit("/", 1)[-1]
    return ref


#: GraphContext fields that size caches and batches, never weights: a weights memo ignores them
_NOT_WEIGHTS: dict[str, Any] = {"max_model_len": 0, "max_num_batched_tokens": 0, "max_num_seqs": 0, "enable_prefix_caching": False,
                "block_size": 0, "limit_mm_per_prompt": (), "skip_mm_profiling": False, "mamba_cache_mode": None}


def _stage_weights(req: ResolvedRequest, ctx: GraphContext, draft_tensors: list[Any]) -> tuple[WeightBreakdown, int]:
    from vmemplan.laws.lora import lora_bytes_for
    from vmemplan.laws.offload import offloaded_bytes_for

    adapter = req.adapter
    # --runner pooling builds no LM head: adapters.py::_create_pooling_model_cls swaps ParallelLMHead for a
    # StageMissingLayer (0.33.0); a tied head was the embedding's storage anyway
    tensors = [t for t in adapter.weight_tensors(ctx) if t.kind != "lm_head" or req.runner != "pooling"]
    wb = weight_bytes_per_rank(tensors + draft_tensors, model_dtype=req.dtype,
                               scheme=req.quant_scheme, allocator_rounding=True)
    # --enable-lora: the stacked adapter buffers are allocated with the weights (laws/lora.py)
    lora_bytes, _ = lora_bytes_for(req, ctx)
    if lora_bytes:
        wb = replace(wb, total_bytes=wb.total_bytes + lora_bytes, by_kind={**wb.by_kind, "lora": lora_bytes})
    # --cpu-offload-gb: whole layers' weights stay in host memory (laws/offload.py)
    offload_bytes, _ = offloaded_bytes_for(req, ctx, tensors)
    if offload_bytes:
        wb = replace(wb, total_bytes=wb.total_bytes - offload_bytes,
                     by_kind={**wb.by_kind, "cpu_offload": -offload_bytes})
    # EPLB's redundant expert copies (and its state buffers) are loaded with the weights but
    # reported apart, so that the total counts them once (vllm/distributed/eplb/eplb_state.py).
    eplb = weight_bytes_per_rank(adapter.eplb_tensors(ctx), model_dtype=req.dtype,
                                 scheme=req.quant_scheme, allocator_rounding=True).total_bytes
    return wb, eplb


def model_graph(req: ResolvedRequest, weights_memo: dict[Any, tuple[WeightBreakdown, int]] | None = None) -> ModelGraph:
    """Weights (allocator-rounded per tensor) and KV specs of every pipeline stage.  ``weights_memo``
    (a dict kept for one model) reuses the weights of a stage whose context differs only in cache and batch sizes."""
    adapter = req.adapter
    stages = []
    for rank in range(req.pipeline_parallel_size):
        ctx = graph_context(req, rank)
        draft_tensors, draft_specs = _drafter(req, ctx)
        if weights_memo is None:
            wb, eplb = _stage_weights(req, ctx, draft_tensors)
        else:
            key = (replace(ctx, **_NOT_WEIGHTS, speculative_model_config=id(ctx.speculative_model_config)),
                   req.dtype, repr(req.quant_scheme), id(adapter), repr(req.lora), req.runner, req.cpu_offload_bytes,
                   req.prefetch_offload, (ctx.max_num_batched_tokens, ctx.max_num_seqs) if adapter.weights_read_batch_tokens else None)
            if key not in weights_memo:
                weights_memo[key] = _stage_weights(req, ctx, draft_tensors)
            wb, eplb = weights_memo[key]
        specs = {**adapter.kv_cache_specs(ctx), **draft_specs}
        if ctx.disable_sliding_window:
            from vmemplan.models.sliding import without_sliding_windows

            specs = without_sliding_windows(specs)
        stages.append(Stage(ctx, wb, eplb, specs))
    notes = req.source.notes
    prov = [Provenance("model.config", _config_ref(req), "given",
                       f"{req.source.source} config.json" + (f" ({'; '.join(notes)})" if notes else ""))]
    scheme_text = req.quant_scheme.describe() if req.quant_scheme is not None else f"{req.dtype} (unquantized)"
    slack = max(s.weights.total_bytes - s.weights.unrounded_bytes for s in stages)
    prov.append(Provenance(
        "weights_bytes", max(s.weights.total_bytes for s in stages), "exact" if adapter.fidelity == "exact" else "estimated",
        f"{adapter.__class__.__name__} tensors at {req.dtype}, sharded over tp={req.tensor_parallel_size}, "
        f"pp={req.pipeline_parallel_size} (vllm/model_executor/models + vocab_parallel_embedding.py, 0.33.0); "
        f"{ {'generic': 'generic decoder fallback', 'assumed': 'family assumed by --assume-family'}.get(adapter.fidelity, 'architecture adapter')}; "
        f"scheme: {scheme_text}; includes {slack:,} B of CUDA caching-allocator rounding "
        "(2 MiB segments, c10/cuda/CUDACachingAllocator.cpp)"))
    prov.extend(_weight_term_provenance(req, stages[-1].ctx))
    return ModelGraph(tuple(stages), adapter.total_params(), tuple(prov))


def _weight_term_provenance(req: ResolvedRequest, ctx: GraphContext) -> list[Provenance]:
    """Where the LoRA buffers and the CPU-offloaded weights inside ``weights_bytes`` come from."""
    from vmemplan.laws.lora import lora_bytes_for
    from vmemplan.laws.offload import offloaded_bytes_for

    out = []
    lora_bytes, lora_text = lora_bytes_for(req, ctx)
    if lora_text:
        out.append(Provenance("weights_bytes.lora", lora_bytes, "exact", lora_text))
    offload_bytes, offload_text = offloaded_bytes_for(req, ctx, req.adapter.weight_tensors(ctx))
    if offload_text:
        out.append(Provenance("weights_bytes.cpu_offload", -offload_bytes, "exact", offload_text))
    return out


# --------------------------------------------------------------------------------------------
# Step 4: the budget
# --------------------------------------------------------------------------------------------


@frozen
class Measured:
    """Figures a startup log measured, substituted for the pipeline's own.  ``None`` keeps the
    pipeline's figure.  ``explain-log`` passes the log's figures; a plan's own figures passed
    back reproduce that plan."""

    total_memory_bytes: int | None = None
    weights_bytes: int | None = None
    activation_peak_bytes: int | None = None
    non_torch_bytes: int | None = None
    cuda_graph_bytes: int | None = None


@frozen
class Budget:
    """The budget and, per pipeline stage, what it leaves for the KV cache."""

    total_bytes: int
    requested_bytes: int
    ranks: tuple[PerRank, ...]
    kv_cache_memory_given: bool
    provenance: tuple[Provenance, ...]
    #: whether the engine runs the memory profile (laws.budget.profiles_memory): not for a V1
    #: model without a KV cache, whose workers get 0 bytes and no budget checks
    profiled: bool = True

    @property
    def fullest(self) -> PerRank:
        """The rank whose KV memory runs out first."""
        return min(self.ranks, key=lambda r: r.available_kv_cache_bytes)


def budget(req: ResolvedRequest, graph: ModelGraph, over: Overheads, measured: Measured | None = None) -> Budget:
    """``requested = round(total × util)``; per stage ``available = requested − non-KV`` (or the
    ``--kv-cache-memory`` figure, which skips the budget as vLLM does)."""
    m = measured or Measured()
    rules = req.rules
    total = m.total_memory_bytes if m.total_memory_bytes is not None else req.gpu.total_memory_bytes
    requested = requested_memory_bytes(total, req.gpu_memory_utilization, rounding=rules.budget.requested_rounding)
    non_torch = m.non_torch_bytes if m.non_torch_bytes is not None else over.non_torch_bytes
    cg_bytes = m.cuda_graph_bytes if m.cuda_graph_bytes is not None else over.cuda_graph.total_bytes
    pp, tp = req.pipeline_parallel_size, req.tensor_parallel_size
    profiled = profiles_memory(rules.engine, any(stage.kv_specs for stage in graph.stages))
    ranks = []
    for stage in graph.stages:
        last = stage.ctx.pipeline_rank == pp - 1
        act = over.activation.peak_bytes if last else over.activation.forward_bytes
        if m.activation_peak_bytes is not None and last:
            act = m.activation_peak_bytes
        weights = stage.weights.total_bytes
        if m.weights_bytes is not None:
            weights = m.weights_bytes
        if not profiled:
            avail = 0
        elif req.kv_cache_memory_bytes is not None:
            avail = req.kv_cache_memory_bytes
        else:
            avail = available_kv_cache_bytes(
                requested_bytes=requested, weights_bytes=weights + stage.eplb_bytes, activation_peak_bytes=act,
                non_torch_bytes=non_torch, cuda_graph_estimate_bytes=cg_bytes,
                subtract_cuda_graph=over.cuda_graph_subtracted, formula=rules.budget.formula,
                pre_budget_bytes=over.pre_budget.total_bytes,
            ).available_bytes
        pre = over.pre_budget
        ranks.append(PerRank(
            weights_bytes=weights, activation_peak_bytes=act, cuda_graph_bytes=cg_bytes,
            eplb_bytes=stage.eplb_bytes, comm_buffer_bytes=0, non_torch_bytes=non_torch,
            fixed_total_bytes=weights + stage.eplb_bytes + act + cg_bytes,
            pre_budget_bytes=pre.total_bytes, requested_memory_bytes=requested,
            available_kv_cache_bytes=avail, cuda_graph_subtracted=over.cuda_graph_subtracted,
            communicator_bytes=pre.communicator_bytes, cuda_context_bytes=pre.cuda_context_bytes,
            workspace_bytes=pre.workspace_bytes, rank=stage.ctx.pipeline_rank * tp, stage=stage.ctx.pipeline_rank,
        ))
    prov = [
        Provenance("requested_memory_bytes", requested, "exact",
                   f"{rules.budget.requested_rounding}(total {total} × util {req.gpu_memory_utilization}) "
                   "(vllm/v1/worker/utils.py::request_memory)"),
        Provenance("gpu.total_memory_bytes", total, "given",
                   "measured in the log" if m.total_memory_bytes is not None else
                   f"registry gpus.yaml {req.gpu.id}: CUDA-reported total ({req.gpu.total_memory_evidence})"),
    ]
    given = req.kv_cache_memory_bytes is not None
    if not profiled:
        prov.append(Provenance("available_kv_cache_bytes", 0, "exact",
                               "no KV cache: vLLM V1 skips the memory profile and gives the workers 0 bytes "
                               "(vllm/v1/engine/core.py::EngineCore._initialize_kv_caches)"))
        return Budget(total, requested, tuple(ranks), given, tuple(prov), profiled=False)
    if given:
        prov.append(Provenance("available_kv_cache_bytes", req.kv_cache_memory_bytes, "given",
                               "--kv-cache-memory: vLLM skips the budget and uses this figure"))
    else:
        prov.append(Provenance("available_kv_cache_bytes", min(r.available_kv_cache_bytes for r in ranks),
                               "estimated", "requested − weights − activation peak − non-torch"
                               + (" − CUDA-graph estimate" if over.cuda_graph_subtracted else "")))
    return Budget(total, requested, tuple(ranks), given, tuple(prov))


# --------------------------------------------------------------------------------------------
# Step 5: the pool
# --------------------------------------------------------------------------------------------


def layout(req: ResolvedRequest, graph: ModelGraph, ctx: PoolContext | None = None) -> PoolLayout | UngroupableSpecs:
    """The KV cache groups of every stage (independent of the bytes available), or why the
    release cannot group these caches."""
    try:
        return pool_layout([stage.kv_specs for stage in graph.stages], ctx or pool_context(req))
    except UngroupableSpecs as exc:
        return exc


def pool(req: ResolvedRequest, graph: ModelGraph, bud: Budget, ctx: PoolContext | None = None,
         grouped: PoolLayout | UngroupableSpecs | None = None) -> tuple[PoolPlan, tuple[str, ...]]:
    """Size each stage's pool from its own bytes over the groups of :func:`layout`; returns the
    pool and any warning (caches the release cannot group are sized at their own page)."""
    ctx = ctx or pool_context(req)
    grouped = grouped if grouped is not None else layout(req, graph, ctx)
    avail = [max(rank.available_kv_cache_bytes, 0) for rank in bud.ranks]
    if isinstance(grouped, PoolLayout):
        sized = size_pool(grouped, avail, ctx)
        return sized, _override_beyond_budget(sized, bud)
    # The release's grouping rules cannot share one pool between these caches: keep each at its
    # own page (not a vLLM rule: vLLM would refuse to start) and say so.
    i = min(range(len(avail)), key=avail.__getitem__)
    warning = (f"vLLM's KV cache grouping cannot place these caches in one pool ({grouped.message}); "
               "each cache type is sized at its own page instead")
    return plan_pool_ungrouped(graph.stages[i].kv_specs, avail[i], ctx), (warning,)


def _override_beyond_budget(kv_pool: PoolPlan, bud: Budget) -> tuple[str, ...]:
    """--num-gpu-blocks-override asking for more than the budget left: vLLM allocates the blocks
    anyway (vllm/v1/core/kv_cache_planning.py::get_kv_cache_configs, 0.33.0), past
    --gpu-memory-utilization; whether the device holds them is refusals.check_plan's question."""
    ctx = kv_pool.ctx
    if ctx is None or ctx.num_gpu_blocks_override is None or not kv_pool.groups:
        return ()
    pool_bytes = kv_pool.num_blocks * kv_pool.block_bytes
    left = bud.fullest.available_kv_cache_bytes
    if pool_bytes <= left:
        return ()
    return (f"--num-gpu-blocks-override {ctx.num_gpu_blocks_override}: the pool takes {format_gib(pool_bytes)} GiB, "
            f"more than the {format_gib(max(left, 0))} GiB the budget leaves for the KV cache; vLLM allocates it "
            "anyway, beyond --gpu-memory-utilization",)


# --------------------------------------------------------------------------------------------
# Step 6: the verdict
# --------------------------------------------------------------------------------------------


def verdict(req: ResolvedRequest, over: Overheads, bud: Budget, kv_pool: PoolPlan) -> Verdict:
    """Would vLLM start, and if not, which of its checks stops it first."""
    total, requested, pre = bud.total_bytes, bud.requested_bytes, over.pre_budget.total_bytes
    fullest = bud.fullest
    # vllm/v1/worker/utils.py::request_memory runs in Worker.init_device, before
    # --kv-cache-memory is consulted: the free-memory check applies with it too (0.33.0).
    if requested + pre > total:
        return Verdict(False, f"the budget ({format_gib(requested)} GiB) plus what vLLM holds before it "
                              f"({format_gib(pre)} GiB) exceeds the GPU's {format_gib(total)} GiB: "
                              "vLLM stops with 'Free memory on device … is less than desired GPU memory utilization'")
    if fullest.weights_bytes > total - pre:
        return Verdict(False, f"the weights ({format_gib(fullest.weights_bytes)} GiB per rank) do not fit the "
                              f"GPU's free memory ({format_gib(total - pre)} GiB): vLLM runs out of memory loading them")
    if not bud.profiled:  # no profile run, no KV cache to check (laws.budget.profiles_memory)
        return Verdict(starts=True)
    if fullest.weights_bytes > requested:
        return Verdict(False, f"the weights ({format_gib(fullest.weights_bytes)} GiB per rank) do not fit the "
                              f"budget ({format_gib(requested)} GiB)")
    override = req.inputs.num_gpu_blocks_override
    if override is not None and kv_pool.groups:
        # vllm/v1/core/kv_cache_planning.py::get_kv_cache_configs (0.33.0): the override replaces the
        # available memory (N x bytes per block) before the checks, whatever the budget left
        usable = (override - (1 if kv_pool.ctx is None or kv_pool.ctx.reserve_null_block else 0)) * kv_pool.block_bytes
        if usable <= 0:
            return Verdict(False, f"No available memory for the cache blocks: --num-gpu-blocks-override {override} "
                                  "leaves no block beside the null block")
        if not kv_pool.fits_one_request:
            return Verdict(False, f"one {req.max_model_len:,}-token request needs {format_gib(kv_pool.needed_bytes)} "
                                  f"GiB of KV cache, more than the {format_gib(usable)} GiB of the "
                                  f"--num-gpu-blocks-override {override} blocks (less the null block)",
                           kv_pool.estimated_max_model_len)
        return Verdict(starts=True)
    if fullest.available_kv_cache_bytes <= 0:
        return Verdict(False, "No available memory for the cache blocks: the non-KV memory "
                              f"exceeds the budget by {format_gib(-fullest.available_kv_cache_bytes)} GiB")
    if not kv_pool.fits_one_request:
        return Verdict(False, f"one {req.max_model_len:,}-token request needs {format_gib(kv_pool.needed_bytes)} GiB "
                              f"of KV cache, more than the {format_gib(fullest.available_kv_cache_bytes)} GiB available",
                       kv_pool.estimated_max_model_len)
    return Verdict(starts=True)


@frozen
class Figures:
    """Steps 4–6 and the band, before the result is put together (what ``sweep`` reads)."""

    budget: Budget
    pool: PoolPlan
    verdict: Verdict
    band: Any  # laws.bands.KvBand | None, without its per-term bands
    warnings: tuple[str, ...]


def figures(req: ResolvedRequest, graph: ModelGraph, over: Overheads, measured: Measured | None = None,
            ctx: PoolContext | None = None, grouped: PoolLayout | UngroupableSpecs | None = None,
            bud: Budget | None = None) -> Figures:
    """Steps 4–6 (budget, pool, verdict) and the KV band for a graph and overheads in hand;
    ``bud``: the budget already computed for this request's budget flags (a sweep over the
    context length keeps it: nothing in it reads the length)."""
    bud = bud if bud is not None else budget(req, graph, over, measured)
    kv_pool, warnings = pool(req, graph, bud, ctx, grouped)
    result = verdict(req, over, bud, kv_pool)
    return Figures(bud, kv_pool, result, kv_band(req, over, bud, kv_pool, result), warnings)


def tail(req: ResolvedRequest, graph: ModelGraph, over: Overheads, measured: Measured | None = None,
         ctx: PoolContext | None = None, grouped: PoolLayout | UngroupableSpecs | None = None) -> MemoryPlan:
    """Steps 4–7 for a graph and overheads (and optionally the pool's layout) already in hand:
    what a budget-only change re-runs."""
    f = figures(req, graph, over, measured, ctx, grouped)
    return assemble(req, graph, over, f.budget, f.pool, f.verdict, f.warnings, band=f.band)


def plan_memory(req: ResolvedRequest, measured: Measured | None = None) -> MemoryPlan:
    """Plan one deployment, every step.  Reports the fullest rank, since its memory runs out first."""
    from vmemplan.model_config import config_value_guard

    with config_value_guard(req.source.model_id):
        graph = model_graph(req)
        return tail(req, graph, overheads(req, graph), measured)


def with_budget_flags(req: ResolvedRequest, *, gpu_memory_utilization: float | None = None,
                      kv_cache_memory_bytes: int | None = None) -> ResolvedRequest:
    """The request with only its budget flags changed (what ``sweep`` varies without re-planning)."""
    # vLLM tests --kv-cache-memory for truth: 0 is unset (see resolve.resolve)
    changes: dict[str, Any] = {"kv_cache_memory_bytes": kv_cache_memory_bytes or None}
    if gpu_memory_utilization is not None:
        changes["gpu_memory_utilization"] = float(gpu_memory_utilization)
        changes["defaulted"] = tuple(d for d in req.defaulted if d != "gpu_memory_utilization")
    return evolve(req, **changes)
