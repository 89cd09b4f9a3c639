"""Step 7 of :mod:`vmemplan.pipeline`: put the steps' figures, their provenance and the error
band into one frozen :class:`~vmemplan.result.MemoryPlan`.  Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from vmemplan.core.records import evolve
from vmemplan.laws.kv_pool import (
    PoolPlan,
)
from vmemplan.result import EngineSettings, KvCacheSummary, KvGroup, MemoryPlan, Provenance, Verdict

if TYPE_CHECKING:
    from vmemplan.pipeline import Budget, ModelGraph, Overheads
    from vmemplan.resolve import ResolvedRequest

__all__ = ["assemble", "engine_settings", "kv_band"]


# --------------------------------------------------------------------------------------------
# Step 7: the frozen result
# --------------------------------------------------------------------------------------------


def _kv_summary(req: ResolvedRequest, kv_pool: PoolPlan) -> KvCacheSummary:
    groups = tuple(KvGroup(**g) for g in kv_pool.groups_summary())
    tokens = req.inputs.request_tokens
    return KvCacheSummary(
        bytes_per_token=kv_pool.bytes_per_token,
        block_size=min((g.block_size for g in groups), default=req.block_size),
        page_size_bytes=kv_pool.block_bytes,
        num_blocks=kv_pool.num_blocks,
        tokens=kv_pool.kv_cache_tokens,
        # no KV cache groups (encoder-only pooling models): vLLM computes no concurrency at all
        # (v1/engine/core.py::EngineCore._initialize_kv_caches calls update_kv_cache_capacity only
        # when there are groups), and no KV cache bounds how many requests run
        max_concurrency=kv_pool.max_concurrency if kv_pool.groups else None,
        groups=groups,
        sequence_fixed_bytes=kv_pool.sequence_fixed_bytes(),
        sequence_admission_bytes=kv_pool.sequence_admission_bytes(),
        request_bytes=kv_pool.request_bytes(tokens) if tokens else None,
        request_tokens=tokens,
        needed_bytes=kv_pool.needed_bytes,
        cache_dtype=req.kv_cache_dtype,
        no_bytes_per_token_reason=None if kv_pool.bytes_per_token is not None else _no_per_token_reason(kv_pool),
    )


def _no_per_token_reason(kv_pool: PoolPlan) -> str:
    """Why the pool has no single bytes-per-token figure, with what does grow: the growing
    caches' record bytes a context token (e.g. DeepSeek-V4.1-Flash's 1,790, seed 002)."""
    own = kv_pool.own_variable_bytes_per_token()
    if own:
        return ("part of what a request holds does not grow with its length (window rings, state pages); "
                f"the growing caches hold {float(own):,.0f} bytes a token (records, before page padding)")
    return "; ".join(kv_pool.notes) or "part of what a request holds does not grow with its length"


def _pool_provenance(req: ResolvedRequest, kv_pool: PoolPlan) -> list[Provenance]:
    exactness: Literal["exact", "estimated"] = "exact" if req.kv_cache_memory_bytes else "estimated"
    override = req.inputs.num_gpu_blocks_override
    if override is not None and kv_pool.groups:
        # the pool's blocks are the flag's, whatever the budget left (so every pool figure is exact)
        exactness = "exact"
        blocks = Provenance("kv_cache.num_blocks", kv_pool.num_blocks, "given",
                            f"--num-gpu-blocks-override {override} replaces the budget's blocks "
                            "(vllm/v1/core/kv_cache_planning.py::get_kv_cache_configs, may_override_num_blocks)")
    else:
        blocks = Provenance("kv_cache.num_blocks", kv_pool.num_blocks, exactness,
                            "available // block bytes per layer group (vllm/v1/core/kv_cache_utils.py::get_num_blocks)")
    prov = [
        blocks,
        Provenance("kv_cache.tokens", kv_pool.kv_cache_tokens, exactness,
                   f"{req.rules.kv_cache.tokens_formula} ({req.rules.id})"),
    ]
    if kv_pool.bytes_per_token is not None:
        prov.append(Provenance("kv_cache.bytes_per_token", kv_pool.bytes_per_token, "exact",
                               "2 × max(1, kv_heads ÷ tp) × head_dim × cache dtype bytes × layers"))
    for note in kv_pool.notes:
        prov.append(Provenance("kv_cache.groups", note, "exact", "vllm/v1/core/kv_cache_utils.py::get_kv_cache_groups"))
    return prov


def engine_settings(req: ResolvedRequest, over: Overheads) -> EngineSettings:
    return EngineSettings(
        tensor_parallel_size=req.tensor_parallel_size, pipeline_parallel_size=req.pipeline_parallel_size,
        max_model_len=req.max_model_len, max_num_seqs=req.max_num_seqs,
        max_num_batched_tokens=req.max_num_batched_tokens, block_size=req.block_size,
        kv_cache_dtype=req.kv_cache_dtype, dtype=req.dtype, gpu_memory_utilization=req.gpu_memory_utilization,
        enforce_eager=req.enforce_eager, enable_prefix_caching=req.enable_prefix_caching,
        kv_cache_memory_bytes=req.kv_cache_memory_bytes, cudagraph_mode=over.cudagraph_mode,
        cudagraph_capture_sizes=len(over.capture_sizes), runner=req.runner,
    )


_UNSET: Any = object()


def outcome(band: Any, result: Verdict) -> Literal["starts", "may_not_start", "does_not_start"]:
    """The plan's outcome: the band's (whether every end of it starts) or the verdict's."""
    if band is not None:
        return band.outcome  # type: ignore[no-any-return]
    return "starts" if result.starts else "does_not_start"


def assemble(req: ResolvedRequest, graph: ModelGraph, over: Overheads, bud: Budget, kv_pool: PoolPlan,
             result: Verdict, warnings: tuple[str, ...] = (), band: Any = _UNSET) -> MemoryPlan:
    """Put the steps' figures and their provenance into one frozen :class:`MemoryPlan`
    (``band``: :func:`kv_band`'s answer, when the caller has it already)."""
    prov = (*graph.provenance, *over.provenance, *bud.provenance, *_pool_provenance(req, kv_pool))
    cfg = req.config
    if band is _UNSET:
        band = kv_band(req, over, bud, kv_pool, result)
    if band is not None:
        band = evolve(band, terms=_term_bands(req, bud))
        prov = (*prov, Provenance("available_kv_cache_bytes.band", list(band.available_kv_cache_bytes_range),
                                  "estimated", band.describe()))
        prov = (*prov, *(_term_provenance(t) for t in band.terms))
    result = evolve(result, outcome=outcome(band, result))
    return MemoryPlan(
        model_id=req.source.model_id, model_source=req.source.source, architecture=cfg.architecture or cfg.model_type,
        gpu_id=req.gpu.id, gpu_name=req.gpu.name, gpu_total_memory_bytes=bud.total_bytes,
        vllm_version=req.vllm_version, rules_pack=req.rules.id, engine=engine_settings(req, over),
        defaulted=req.defaulted, per_rank=bud.fullest, kv_cache=_kv_summary(req, kv_pool), verdict=result,
        provenance=tuple(prov), warnings=tuple(req.warnings) + tuple(warnings),
        ranks=bud.ranks if req.pipeline_parallel_size > 1 else (), parameters=graph.parameters, pool=kv_pool,
        notes=tuple(req.source.notes) + tuple(req.notes), rules=req.rules, band=band,
    )


def _term_provenance(t: Any) -> Provenance:
    w = t.width
    return Provenance(f"{t.term}.band", list(t.range_bytes), "estimated",
                      f"± {w.half_width_fraction:.2%} of the budget: largest residual on this figure of "
                      f"{len(w.logs)} corpus logs that print it ({w.level.replace('_', ' × ')} group {w.group}; "
                      "registry bands.yaml)")


def kv_band(req: ResolvedRequest, over: Overheads, bud: Budget, kv_pool: PoolPlan, result: Verdict) -> Any:
    """The error band on the estimated KV figures (vmemplan/laws/bands.py), or None when the
    figures are exact (``--kv-cache-memory``) or the registry has no band data.  The ends are
    re-sized over the fullest rank's KV cache groups; the per-term bands are :func:`assemble`'s."""
    data = req.registry.bands
    if bud.kv_cache_memory_given or not bud.profiled or data is None or req.registry.cost_model is None:
        return None
    from vmemplan.laws import bands as band_law
    from vmemplan.laws.kv_pool import resized

    era = req.registry.cost_model.era_for(req.vllm_version, engine=req.rules.engine).id
    width = band_law.band_width(data, era=era, family=req.adapter.family)
    fullest = bud.fullest
    # the checks that do not depend on the KV figure (verdict(), above)
    others_ok = (bud.requested_bytes + over.pre_budget.total_bytes <= bud.total_bytes
                 and fullest.weights_bytes <= bud.requested_bytes)

    def resize(avail: int) -> tuple[int, int, float, bool, PoolPlan]:
        if kv_pool.ctx is None:
            return kv_pool.num_blocks, kv_pool.kv_cache_tokens, kv_pool.max_concurrency, result.starts, kv_pool
        p = resized(kv_pool, avail)
        # --num-gpu-blocks-override: vLLM checks the override's blocks, not the budget's bytes
        positive = avail > 0 or req.inputs.num_gpu_blocks_override is not None
        return (p.num_blocks, p.kv_cache_tokens, p.max_concurrency,
                others_ok and positive and p.fits_one_request, p)

    return band_law.kv_band(available_kv_cache_bytes=fullest.available_kv_cache_bytes,
                            requested_bytes=bud.requested_bytes, width=width, resize=resize,
                            central_starts=result.starts)


def _term_bands(req: ResolvedRequest, bud: Budget) -> Any:
    """The band of each estimated term on the fullest rank (a plan with a band has band data)."""
    from vmemplan.laws import bands as band_law

    data, cost_model = req.registry.bands, req.registry.cost_model
    assert data is not None and cost_model is not None
    era = cost_model.era_for(req.vllm_version, engine=req.rules.engine).id
    estimates = {t: getattr(bud.fullest, t) for t in band_law.TERMS}
    return band_law.term_bands(data, estimates, era=era, family=req.adapter.family,
                               requested_bytes=bud.requested_bytes)


