"""The shared KV cache block pool, as vLLM 0.33.0 sizes it (the groups come from
:mod:`vmemplan.laws.kv_groups`).

Pipeline (vllm/v1/core/kv_cache_planning.py, 0.33.0):

1. ``group_kv_cache_specs`` puts the layers into KV cache groups that share one
   block table (``get_kv_cache_groups``);
2. one pool block id costs ``block_bytes`` = the widest group's bytes for one block
   (``_get_kv_cache_bytes_per_block``), so ``num_blocks = available // block_bytes``;
3. a request at max_model_len claims ``sum_g cdiv(max_mem_g, page_g)`` block ids
   (``get_max_concurrency_for_kv_cache_config``) and the engine reports
   ``num_blocks / that`` as the concurrency and ``int(concurrency * max_model_len)``
   as "GPU KV cache size" (``get_kv_cache_capacity``);
4. startup fails unless ``block_bytes * blocks_per_request`` fits in the available
   bytes less the null block (``get_kv_cache_configs`` + ``_check_enough_kv_cache_memory``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field, replace
from fractions import Fraction
from typing import Any

from vmemplan.core.errors import BadInput, UsageError
from vmemplan.core.frozen import frozen
from vmemplan.core.kv_specs import (
    FullAttentionSpec,
    MLAAttentionSpec,
    Spec,
    UniformTypeKVCacheSpecs,
)
from vmemplan.core.units import cdiv
from vmemplan.laws.kv_groups import (
    KvCacheGroup,
    PoolContext,
    _groups_block_outermost,
    _make_groups,
    _with_retained_tokens,
    approximate_gcd,
    bytes_per_block,
    group_kv_cache_specs,
)
from vmemplan.laws.kv_spec_relations import UngroupableSpecs, _bucket_by_uniform_type

__all__ = [
    "PoolContext",
    "KvCacheGroup",
    "PoolPlan",
    "UngroupableSpecs",
    "resized",
    "group_kv_cache_specs",
    "bytes_per_block",
    "approximate_gcd",
    "plan_pool",
    "plan_pool_from_groups",
    "plan_pool_ungrouped",
    "plan_pool_multi_worker",
]

# --------------------------------------------------------------------------------------
# The plan
# --------------------------------------------------------------------------------------


@frozen
class PoolPlan:
    """The KV cache pool one rank gets and what one request costs in it.

    ``block_bytes`` is what one pool block id costs across all layers;
    ``blocks_per_request`` counts a max_model_len request's block ids over every
    group; ``kv_cache_tokens`` follows ``ctx.tokens_formula``;
    ``bytes_per_token`` is ``None`` where no single per-token figure exists
    (windows, recurrent state, compressed caches, several block sizes)."""

    groups: tuple[KvCacheGroup, ...]
    num_blocks: int
    block_bytes: int
    blocks_per_request: int
    max_concurrency: float
    kv_cache_tokens: int
    bytes_per_token: int | None
    needed_bytes: int
    fits_one_request: bool
    estimated_max_model_len: int | None
    notes: tuple[str, ...] = ()
    ctx: PoolContext | None = field(default=None, compare=False, repr=False)

    # -- per-request figures --------------------------------------------------------
    def _ctx(self) -> PoolContext:
        if self.ctx is None:  # pragma: no cover - always set by the builders
            raise ValueError("PoolPlan built without a context")
        return self.ctx

    def sequence_variable_blocks(self, tokens: int) -> int:
        """Block ids the growing caches hold for ``tokens`` of context (each group
        rounds up to whole blocks; DCP shards tokens, PCP does not)."""
        if tokens < 0:
            raise UsageError("tokens must not be negative")
        ctx = self._ctx()
        return sum(g.spec.context_pages(tokens, ctx) for g in self.groups)

    def sequence_variable_bytes(self, tokens: int) -> int:
        """Pool bytes of the growing caches at ``tokens`` of context."""
        return self.sequence_variable_blocks(tokens) * self.block_bytes

    def sequence_fixed_blocks(self) -> int:
        """Block ids held regardless of length in steady decode: window rings at
        ``cdiv(window - 1 + 1 + spec, block) + 1``, recurrent state (none: 1 + spec,
        align: 2 + spec), compressor rings (1), cross-attention caches."""
        ctx = self._ctx()
        return sum(g.spec.steady_pages(ctx) for g in self.groups)

    def sequence_fixed_bytes(self) -> int:
        return self.sequence_fixed_blocks() * self.block_bytes

    def sequence_admission_blocks(self) -> int:
        """Block ids the engine reserves for the bounded state of one admitted
        request: window rings at ``cdiv(min(window - 1 + in_flight, L), block) + 1``
        with ``in_flight = max_concurrent_batches * max_num_batched_tokens``
        (``SlidingWindowSpec.max_admission_blocks_per_request``, 0.33.0)."""
        ctx = self._ctx()
        return sum(g.spec.admission_pages(ctx) for g in self.groups)

    def sequence_admission_bytes(self) -> int:
        return self.sequence_admission_blocks() * self.block_bytes

    def request_bytes(self, tokens: int) -> int:
        """Steady-decode pool bytes of one request: variable + fixed."""
        return self.sequence_variable_bytes(tokens) + self.sequence_fixed_bytes()

    def own_fixed_bytes(self) -> int:
        """What the bounded caches' own pages sum to in steady decode (without the
        pool's per-block waste)."""
        ctx = self._ctx()
        total = 0
        for g in self.groups:
            for spec in g.layer_specs():
                total += spec.steady_pages(ctx) * spec.page_size_bytes
        return total

    def own_variable_bytes_per_token(self) -> Fraction:
        """Record bytes per context token of the growing caches (unpadded page /
        block size, summed over the layers that own one)."""
        total = Fraction(0)
        for g in self.groups:
            for spec in g.layer_specs():
                if spec.grows_with_context:
                    total += Fraction(spec.unpadded_page_size_bytes, spec.block_size)
        return total

    def groups_summary(self) -> list[dict[str, Any]]:
        ctx = self._ctx()
        return [
            {
                "kind": g.kind,
                "layers": len(g.layer_names),
                "block_size": g.block_size,
                "page_size_bytes": g.page_size_bytes,
                "blocks_per_request": g.pages_per_request(ctx),
            }
            for g in self.groups
        ]


def _blocks_per_request(groups: Sequence[KvCacheGroup], ctx: PoolContext) -> int:
    """``sum_g cdiv(max_memory_usage_bytes_g, page_g)``
    (get_max_concurrency_for_kv_cache_config / _max_memory_usage_bytes_from_groups)."""
    return sum(g.pages_per_request(ctx) for g in groups)


def _tokens(num_blocks: int, concurrency: float, groups: Sequence[KvCacheGroup], ctx: PoolContext) -> int:
    """"GPU KV cache size" by release: ``int(concurrency * L)`` (>= 2026-04-28);
    ``num_blocks // len(groups) * min block`` times DCP x PCP (2025-10 .. 2026-04);
    ``num_blocks * block_size`` (early V1)."""
    min_block = min(g.block_size for g in groups)
    if ctx.tokens_formula == "concurrency_x_max_model_len":
        return int(concurrency * ctx.max_model_len)
    if ctx.tokens_formula == "blocks_div_groups_x_min_block":
        tokens = num_blocks // len(groups) * min_block
        cp = ctx.decode_context_parallel_size * ctx.prefill_context_parallel_size
        return tokens * cp if cp > 1 else tokens
    if ctx.tokens_formula == "blocks_x_block_size":
        return num_blocks * min_block
    raise UsageError(f"unknown tokens formula {ctx.tokens_formula!r}")


def _sized_plan(groups: tuple[KvCacheGroup, ...], num_blocks: int, block_bytes: int, per_request: int,
                ctx: PoolContext, bytes_per_token: int | None, needed: int, fits: bool, estimated: int | None,
                notes: Sequence[str]) -> PoolPlan:
    """The plan of a pool of ``num_blocks`` blocks: ``max_concurrency = num_blocks /
    blocks_per_request`` (``get_max_concurrency_for_kv_cache_config``) and the release's
    token count (:func:`_tokens`); the one-request verdict is the caller's."""
    concurrency = num_blocks / per_request if per_request else 0.0
    return PoolPlan(
        groups=groups,
        num_blocks=num_blocks,
        block_bytes=block_bytes,
        blocks_per_request=per_request,
        max_concurrency=concurrency,
        kv_cache_tokens=_tokens(num_blocks, concurrency, groups, ctx),
        bytes_per_token=bytes_per_token,
        needed_bytes=needed,
        fits_one_request=fits,
        estimated_max_model_len=estimated,
        notes=tuple(notes),
        ctx=ctx,
    )


def _bytes_per_token(groups: Sequence[KvCacheGroup], block_bytes: int) -> int | None:
    block_sizes = {g.block_size for g in groups}
    if len(block_sizes) != 1:
        return None
    for g in groups:
        for spec in g.distinct_specs:
            if not isinstance(spec, (FullAttentionSpec, MLAAttentionSpec)):
                return None
            if spec.tokens_per_state != 1:
                return None
    total = len(groups) * block_bytes
    bs = block_sizes.pop()
    return total // bs if total % bs == 0 else None


def _estimate_max_model_len(groups: Sequence[KvCacheGroup], block_bytes: int, check_bytes: int, ctx: PoolContext) -> int:
    """Largest max_model_len in ``[1, L]`` whose one-request need fits, 0 if none
    (``_estimate_max_model_len_from_groups``, binary search, 0.33.0)."""

    def fits(length: int) -> bool:
        return block_bytes * _blocks_per_request(groups, ctx.with_max_model_len(length)) <= check_bytes

    lo, hi = 1, ctx.max_model_len
    if not fits(lo):
        return 0
    result = 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if fits(mid):
            result, lo = mid, mid + 1
        else:
            hi = mid - 1
    return result


def plan_pool_from_groups(
    groups: Sequence[KvCacheGroup], available_bytes: int, ctx: PoolContext, notes: Sequence[str] = ()
) -> PoolPlan:
    """Size the pool for already-formed groups (see :func:`plan_pool`)."""
    groups = tuple(groups)
    notes = list(notes)
    if not groups:
        notes.append("attention-free model: the pool holds only the null block")
        return PoolPlan(groups, 1, 0, 0, 0.0, 0, None, 0, True, None, tuple(notes), ctx)
    block_bytes = bytes_per_block(groups, ctx)
    return _pool_at(groups, available_bytes, ctx, block_bytes, _blocks_per_request(groups, ctx),
                    _bytes_per_token(groups, block_bytes), notes)


def resized(pool: PoolPlan, available_bytes: int) -> PoolPlan:
    """``pool`` (sized for its own groups and context) sized again for ``available_bytes``: the
    same law as :func:`plan_pool_from_groups`, reusing what does not depend on the bytes (the
    block's bytes, the blocks one request needs, the bytes per token)."""
    if pool.ctx is None:  # a pool with no context (attention-free, no groups) has nothing to re-size
        return pool
    if not pool.groups:
        return plan_pool_from_groups((), available_bytes, pool.ctx)
    return _pool_at(pool.groups, available_bytes, pool.ctx, pool.block_bytes, pool.blocks_per_request,
                    pool.bytes_per_token, ())


def _pool_at(groups: tuple[KvCacheGroup, ...], available_bytes: int, ctx: PoolContext, block_bytes: int,
             per_request: int, bytes_per_token: int | None, notes: Sequence[str]) -> PoolPlan:
    """The pool of ``groups`` (``block_bytes`` a block, ``per_request`` blocks a request) for
    ``available_bytes``, with vLLM's one-request check."""
    notes = list(notes)
    avail = available_bytes
    if ctx.num_gpu_blocks_override is not None:
        notes.append(
            f"num_gpu_blocks_override={ctx.num_gpu_blocks_override} replaces "
            f"{max(available_bytes, 0) // block_bytes} blocks"
        )
        avail = ctx.num_gpu_blocks_override * block_bytes
    num_blocks = max(avail // block_bytes, 0) if avail > 0 else 0  # none when nothing is available
    needed = block_bytes * per_request
    check = avail - block_bytes if ctx.reserve_null_block else avail
    estimated: int | None = None
    if avail <= 0 or check <= 0:
        fits = False
        notes.append("No available memory for the cache blocks")
    elif needed > check:
        fits = False
        estimated = _estimate_max_model_len(groups, block_bytes, check, ctx)
        notes.append(
            f"one request at max_model_len {ctx.max_model_len} needs {needed} bytes, "
            f"more than the {check} available after the null block"
        )
    else:
        fits = True
    return _sized_plan(groups, num_blocks, block_bytes, per_request, ctx, bytes_per_token,
                       needed, fits, estimated, notes)


def plan_pool(layer_specs: Mapping[str, Spec], available_bytes: int, ctx: PoolContext) -> PoolPlan:
    """Group the layers and size the pool for ``available_bytes`` on one rank.

    ``num_blocks = available // block_bytes`` (or the override);
    ``max_concurrency = num_blocks / blocks_per_request``; the one-request check
    compares ``block_bytes * blocks_per_request`` with ``available - block_bytes``
    (the null block), and when it fails ``estimated_max_model_len`` is vLLM's binary
    search.  Mirrors get_kv_cache_configs, get_kv_cache_config_from_groups,
    get_max_concurrency_for_kv_cache_config and get_kv_cache_capacity (0.33.0).
    """
    return plan_pool_from_groups(group_kv_cache_specs(layer_specs, ctx), available_bytes, ctx)


def plan_pool_ungrouped(layer_specs: Mapping[str, Spec], available_bytes: int, ctx: PoolContext) -> PoolPlan:
    """Fallback when the release cannot group the caches: each same-type bucket keeps
    its own page (no block padding).  A request costs ``R = sum_g pages_g * page_g``;
    the plan reports an average block of ``ceil(R / blocks_per_request)`` bytes so
    ``num_blocks / blocks_per_request`` is the concurrency.  Not a vLLM law: an
    approximation that says so in ``notes``."""
    specs = _with_retained_tokens(layer_specs, ctx)
    if not specs:
        return plan_pool_from_groups((), available_bytes, ctx)
    buckets = _bucket_by_uniform_type(specs)
    raw: list[tuple[list[str], Spec]] = [(list(b), UniformTypeKVCacheSpecs.of(b)) for b in buckets]
    groups = _make_groups(raw, block_outermost=True)
    per_request = _blocks_per_request(groups, ctx)
    request = sum(g.pages_per_request(ctx) * g.page_size_bytes for g in groups)
    block_bytes = cdiv(request, per_request) if per_request else max(g.page_size_bytes for g in groups)
    note = "the release's rules cannot group these caches; each keeps its own page (approximate pool)"
    num_blocks = max(available_bytes // block_bytes, 0) if available_bytes > 0 else 0
    check = available_bytes - block_bytes
    fits = available_bytes > 0 and check > 0 and request <= check
    return _sized_plan(groups, num_blocks, block_bytes, per_request, ctx, None, request, fits, None, [note])


def _project(groups: Sequence[KvCacheGroup], worker: Mapping[str, Spec], block_outermost: bool) -> tuple[KvCacheGroup, ...]:
    """``_project_kv_cache_groups_to_worker``: keep each group (even empty), restricted
    to the worker's layers; a bundle keeps only those layers' specs."""
    out = []
    for g in groups:
        names = [n for n in g.layer_names if n in worker]
        if len(names) == len(g.layer_names):
            out.append(g)
            continue
        spec = g.spec
        if names and isinstance(spec, UniformTypeKVCacheSpecs):
            spec = UniformTypeKVCacheSpecs(block_size=spec.block_size, layers=tuple((n, spec.specs[n]) for n in names))
        page = spec.page_size_bytes if isinstance(spec, UniformTypeKVCacheSpecs) else spec.page_size_bytes * len(names)
        out.append(replace(g, layer_names=tuple(names), spec=spec, page_size_bytes=page))
    return tuple(out)


@frozen
class PoolLayout:
    """The grouping of every worker's layers, which does not depend on the bytes available:
    the global groups and each worker's projection of them (empty workers dropped)."""

    groups: tuple[KvCacheGroup, ...]
    projected: tuple[tuple[KvCacheGroup, ...], ...]
    worker_index: tuple[int, ...]  # which worker each projection belongs to


def pool_layout(worker_specs: Sequence[Mapping[str, Spec]], ctx: PoolContext) -> PoolLayout:
    """Group the merged layers of every worker once and project the groups onto each worker
    (get_global_kv_cache_groups, _project_kv_cache_groups_to_worker, 0.33.0)."""
    if not worker_specs:
        raise UsageError("no workers given")
    merged: dict[str, Spec] = {}
    for specs in worker_specs:
        for name, spec in specs.items():
            if name in merged and merged[name] != spec:
                raise BadInput(f"layer {name} has different KV cache specs on different workers")
            merged.setdefault(name, spec)
    global_groups = group_kv_cache_specs(merged, ctx)
    if not global_groups:
        return PoolLayout((), (), ())
    block_outermost = _groups_block_outermost(global_groups, ctx)
    projected, index = [], []
    for i, specs in enumerate(worker_specs):
        proj = _project(global_groups, specs, block_outermost)
        if any(g.layer_names for g in proj):
            projected.append(proj)
            index.append(i)
    return PoolLayout(global_groups, tuple(projected), tuple(index))


def size_pool(layout: PoolLayout, available_bytes: Sequence[int], ctx: PoolContext) -> PoolPlan:
    """Size each worker's pool from its own bytes, check each, then give every worker the
    smallest block count; the concurrency is reported against the first worker's groups, as the
    scheduler's config is the first worker's (get_kv_cache_configs, 0.33.0)."""
    if not layout.groups:
        return plan_pool_from_groups((), min(available_bytes), ctx)
    plans = [plan_pool_from_groups(proj, available_bytes[i], ctx)
             for proj, i in zip(layout.projected, layout.worker_index)]
    first = plans[0]
    min_blocks = min(p.num_blocks for p in plans)
    concurrency = min_blocks / first.blocks_per_request if first.blocks_per_request else 0.0
    notes = [n for p in plans for n in p.notes]
    notes.append(f"{len(plans)} workers: every worker gets the smallest block count, {min_blocks}")
    unfit = [p for p in plans if not p.fits_one_request]
    estimates = [p.estimated_max_model_len for p in unfit if p.estimated_max_model_len is not None]
    return PoolPlan(
        groups=layout.groups,
        num_blocks=min_blocks,
        block_bytes=first.block_bytes,
        blocks_per_request=first.blocks_per_request,
        max_concurrency=concurrency,
        kv_cache_tokens=_tokens(min_blocks, concurrency, first.groups, ctx),
        bytes_per_token=first.bytes_per_token,
        needed_bytes=max(p.needed_bytes for p in plans),
        fits_one_request=not unfit,
        estimated_max_model_len=min(estimates) if estimates else None,
        notes=tuple(notes),
        ctx=ctx,
    )


def plan_pool_multi_worker(workers: Sequence[tuple[Mapping[str, Spec], int]], ctx: PoolContext) -> PoolPlan:
    """Pipeline stages (or ranks with different memory): :func:`pool_layout` then
    :func:`size_pool`.  Mirrors get_global_kv_cache_groups and get_kv_cache_configs (0.33.0)."""
    if not workers:
        raise UsageError("no workers given")
    return size_pool(pool_layout([w for w, _ in workers], ctx), [a for _, a in workers], ctx)
