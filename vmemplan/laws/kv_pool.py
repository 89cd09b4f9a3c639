"""The shared KV cache block pool, as vLLM 0.33.0 groups and sizes it.

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

import math
from collections import defaultdict
from dataclasses import dataclass, field, fields, replace
from fractions import Fraction
from typing import Literal, Mapping, Sequence

from vmemplan.errors import BadInput, UsageError
from vmemplan.laws.kv_specs import (
    ChunkedLocalAttentionSpec,
    CircularBufferSpec,
    CrossAttentionSpec,
    EncoderOnlyAttentionSpec,
    FullAttentionSpec,
    MambaSpec,
    MLAAttentionSpec,
    SlidingWindowMLASpec,
    SlidingWindowSpec,
    Spec,
    UniformTypeKVCacheSpecs,
    cdiv,
    round_up,
)

__all__ = [
    "PoolContext",
    "KvCacheGroup",
    "PoolPlan",
    "UngroupableSpecs",
    "group_kv_cache_specs",
    "bytes_per_block",
    "approximate_gcd",
    "plan_pool",
    "plan_pool_from_groups",
    "plan_pool_ungrouped",
    "plan_pool_multi_worker",
]

TokensFormula = Literal["blocks_x_block_size", "blocks_div_groups_x_min_block", "concurrency_x_max_model_len"]
LayoutChoice = Literal["auto", "layer_outermost", "block_outermost"]


class UngroupableSpecs(BadInput):
    """The release's grouping rules cannot put these layers into one pool (page sizes
    that neither divide nor may be padded).  Callers fall back to
    :func:`plan_pool_ungrouped` and record a provenance note."""


@dataclass(frozen=True)
class PoolContext:
    """The engine settings the pool laws read (release-dependent knobs come from the
    rules packs; defaults are vLLM 0.33.0's).

    ``hybrid_group_threshold``: hybrid grouping uses the largest layer-type count as
    the group size when ``max < min * threshold`` (1.5 in 0.33.0; ``None`` = always
    the smallest, as before 2025-11-24).  ``kv_cache_layout``: ``auto`` takes a
    block-outermost layout when latent (MLA) caches mix page sizes (the DeepSeek
    indexer backends declare only block-outermost layouts), else vLLM's default
    layer-outermost LBNHC.  ``pad_undividable_pages`` mirrors 0.33.0 padding a
    non-MLA attention page that does not divide the largest page (older releases
    refuse).  ``reserve_null_block`` mirrors 0.33.0 checking the one-request fit
    against ``available - block_bytes``.
    """

    max_model_len: int
    max_num_batched_tokens: int
    decode_context_parallel_size: int = 1
    prefill_context_parallel_size: int = 1
    num_speculative_tokens: int = 0
    async_scheduling: bool = True
    hybrid_group_threshold: float | None = 1.5
    tokens_formula: TokensFormula = "concurrency_x_max_model_len"
    disable_hybrid_kv_cache_manager: bool = False
    num_gpu_blocks_override: int | None = None
    # added knobs
    pipeline_parallel_size: int = 1
    use_v2_model_runner: bool = False
    max_num_encoder_input_tokens: int | None = None
    num_prefill_lookahead_tokens: int = 0
    kv_cache_layout: LayoutChoice = "auto"
    pad_undividable_pages: bool = True
    reserve_null_block: bool = True

    def __post_init__(self) -> None:
        if self.max_model_len <= 0:
            raise UsageError(f"max_model_len must be positive, got {self.max_model_len}")
        if self.max_num_batched_tokens <= 0:
            raise UsageError(f"max_num_batched_tokens must be positive, got {self.max_num_batched_tokens}")
        for name in ("decode_context_parallel_size", "prefill_context_parallel_size", "pipeline_parallel_size"):
            if getattr(self, name) < 1:
                raise UsageError(f"{name} must be at least 1")
        if self.num_speculative_tokens < 0:
            raise UsageError("num_speculative_tokens must not be negative")
        if self.num_gpu_blocks_override is not None and self.num_gpu_blocks_override < 1:
            raise UsageError("num_gpu_blocks_override must be positive")

    @property
    def max_concurrent_batches(self) -> int:
        """Batches in flight at once: 2 under async scheduling (V1 runner, no PP),
        PP + 1 with the V2 runner, else the PP size.  Mirrors
        VllmConfig.max_concurrent_batches (vllm/config/vllm.py, 0.33.0)."""
        pp = self.pipeline_parallel_size
        if self.async_scheduling:
            if self.use_v2_model_runner:
                return pp + 1
            if pp <= 1:
                return 2
        return pp

    @property
    def max_in_flight_tokens(self) -> int:
        """``max_concurrent_batches * max_num_batched_tokens``
        (VllmConfig.max_in_flight_tokens, 0.33.0)."""
        return self.max_concurrent_batches * self.max_num_batched_tokens

    @property
    def encoder_input_tokens(self) -> int:
        if self.max_num_encoder_input_tokens is not None:
            return self.max_num_encoder_input_tokens
        return self.max_num_batched_tokens

    def with_max_model_len(self, max_model_len: int) -> PoolContext:
        return replace(self, max_model_len=max_model_len)


@dataclass(frozen=True)
class KvCacheGroup:
    """One KV cache group: layers sharing one block table.

    ``spec`` is the merged spec (a :class:`UniformTypeKVCacheSpecs` when pages
    differ inside the group); ``page_size_bytes`` is the group's bytes per block;
    ``padding_layers`` is how many pages of the widest group this one leaves empty
    in every pool block (layers of its own page size)."""

    kind: str
    layer_names: tuple[str, ...]
    spec: Spec
    block_size: int
    page_size_bytes: int
    padding_layers: int = 0

    def layer_spec(self, name: str) -> Spec:
        if isinstance(self.spec, UniformTypeKVCacheSpecs):
            return self.spec.specs[name]
        return self.spec

    def layer_specs(self) -> list[Spec]:
        return [self.layer_spec(n) for n in self.layer_names]

    def pages_per_request(self, ctx: PoolContext) -> int:
        """Block ids one request at max_model_len claims in this group."""
        return self.spec.max_memory_usage_pages(ctx)


# --------------------------------------------------------------------------------------
# Spec relations (merge / uniform type)
# --------------------------------------------------------------------------------------


class _Incompatible(Exception):
    pass


def _field_values(spec, skip: tuple[str, ...] = ()) -> tuple:
    return tuple(getattr(spec, f.name) for f in fields(spec) if f.name not in skip)


def _distinct(specs: Sequence[Spec]) -> Sequence[Spec]:
    """The distinct specs in first-seen order (a stack of identical layers costs one)."""
    by_id = list({id(s): s for s in specs}.values())  # adapters share one object per layer kind
    try:
        return list(dict.fromkeys(by_id))
    except TypeError:  # a spec holding an unhashable field: compare them all
        return by_id


def _merge(specs: Sequence[Spec]) -> Spec:
    """Merge layer specs into one group spec or raise :class:`_Incompatible`.

    Full attention ignores differing-but-single window / chunk values (a layer with
    and without a window merge); MLA and window-MLA compare everything but the
    alignment knob (its effect shows in the page); every other spec must be equal.
    Mirrors the ``merge`` classmethods of vllm/v1/kv_cache_interface.py (0.33.0).
    """
    specs = _distinct(specs)  # equal layers merge alike: compare each distinct spec once
    first = specs[0]
    if type(first) is FullAttentionSpec:
        if not all(type(s) is FullAttentionSpec for s in specs):
            raise _Incompatible
        core = _field_values(first, ("sliding_window", "attention_chunk_size"))
        if any(_field_values(s, ("sliding_window", "attention_chunk_size")) != core for s in specs):
            raise _Incompatible
        windows = {s.sliding_window for s in specs if s.sliding_window is not None}
        chunks = {s.attention_chunk_size for s in specs if s.attention_chunk_size is not None}
        if len(windows) > 1 or len(chunks) > 1 or (windows and chunks):
            raise _Incompatible
        return replace(
            first,
            sliding_window=next(iter(windows)) if windows else None,
            attention_chunk_size=next(iter(chunks)) if chunks else None,
        )
    if type(first) in (MLAAttentionSpec, SlidingWindowMLASpec):
        core = _field_values(first, ("alignment",))
        if not all(type(s) is type(first) and _field_values(s, ("alignment",)) == core for s in specs):
            raise _Incompatible
        return first
    if not all(s == first for s in specs):
        raise _Incompatible
    return first


def _is_uniform(specs: Mapping[str, Spec]) -> bool:
    """``is_kv_cache_spec_uniform``: every layer merges into one spec."""
    if not specs:
        return True
    try:
        _merge(list(specs.values()))
    except _Incompatible:
        return False
    return True


def _dcp_sharded(spec: Spec) -> bool:
    return bool(getattr(spec, "dcp_sharded", False))


def _is_uniform_type(specs: Mapping[str, Spec]) -> bool:
    """``UniformTypeKVCacheSpecs.is_uniform_type``: one block size, one DCP sharding,
    and one registered base type (full attention incl. MLA; window of one size;
    window-MLA of one size and replay policy; chunk of one size; circular buffer;
    Mamba with equal speculative/checkpoint blocks and page; cross attention)."""
    return _uniform_type_values(_distinct(list(specs.values())))


def _bucket_by_uniform_type(specs: Mapping[str, Spec]) -> list[dict[str, Spec]]:
    """Layers bucketed greedily, in order, by uniform type (each layer joins the first bucket it
    keeps uniform); a bucket's distinct specs are compared, so the cost does not grow with depth."""
    buckets: list[dict[str, Spec]] = []
    kinds: list[list[Spec]] = []  # each bucket's distinct specs
    for name, spec in specs.items():
        for bucket, distinct in zip(buckets, kinds):
            candidate = distinct if spec in distinct else [*distinct, spec]
            if _uniform_type_values(candidate):
                bucket[name] = spec
                if candidate is not distinct:
                    distinct.append(spec)
                break
        else:
            buckets.append({name: spec})
            kinds.append([spec])
    return buckets


def _uniform_type_values(values: Sequence[Spec]) -> bool:
    if not values:
        return False
    if len({s.block_size for s in values}) > 1:
        return False
    if len({_dcp_sharded(s) for s in values}) > 1:
        return False
    first = values[0]
    if isinstance(first, (FullAttentionSpec, MLAAttentionSpec)):
        return all(isinstance(s, (FullAttentionSpec, MLAAttentionSpec)) for s in values)
    if isinstance(first, SlidingWindowMLASpec):
        return all(
            isinstance(s, SlidingWindowMLASpec)
            and s.sliding_window == first.sliding_window
            and s.bounded_replay == first.bounded_replay
            for s in values
        )
    if isinstance(first, SlidingWindowSpec):
        return all(
            isinstance(s, (SlidingWindowSpec, SlidingWindowMLASpec)) and s.sliding_window == first.sliding_window
            for s in values
        )
    if isinstance(first, ChunkedLocalAttentionSpec):
        return all(
            isinstance(s, ChunkedLocalAttentionSpec) and s.attention_chunk_size == first.attention_chunk_size
            for s in values
        )
    if isinstance(first, MambaSpec):
        return all(
            isinstance(s, MambaSpec)
            and s.num_speculative_blocks == first.num_speculative_blocks
            and s.num_prefill_checkpoint_blocks == first.num_prefill_checkpoint_blocks
            and s.page_size_bytes == first.page_size_bytes
            and s.tp_replicated == first.tp_replicated
            for s in values
        )
    for cls in (CircularBufferSpec, CrossAttentionSpec, EncoderOnlyAttentionSpec):
        if isinstance(first, cls):
            return all(isinstance(s, cls) for s in values)
    return False


# --------------------------------------------------------------------------------------
# Local-attention promotion (HMA disabled / allocation fallback)
# --------------------------------------------------------------------------------------


def _promote_one(spec: Spec, block_size: int) -> Spec:
    def padded(s) -> int | None:
        if s.page_size_padded is None:
            return None
        return max(s.page_size_padded, s.unpadded_page_size_bytes * block_size // s.block_size)

    if isinstance(spec, SlidingWindowMLASpec):
        return MLAAttentionSpec(
            block_size=block_size,
            head_size=spec.head_size,
            cache_dtype=spec.cache_dtype,
            dtype_bytes=spec.dtype_bytes,
            compress_ratio=spec.tokens_per_state,
            model_version=spec.model_version,
            alignment=spec.alignment,
            state_content_bytes=spec.state_content_bytes,
            page_size_padded=padded(spec),
            num_kv_heads=spec.num_kv_heads,
            dcp_sharded=spec.dcp_sharded,
            block_stride_alignment=spec.block_stride_alignment,
            num_head_slots=spec.num_head_slots,
        )
    if isinstance(spec, (SlidingWindowSpec, ChunkedLocalAttentionSpec)):
        return FullAttentionSpec(
            block_size=block_size,
            num_kv_heads=spec.num_kv_heads,
            head_size=spec.head_size,
            cache_dtype=spec.cache_dtype,
            dtype_bytes=spec.dtype_bytes,
            head_size_v=spec.head_size_v,
            sliding_window=getattr(spec, "sliding_window", None),
            attention_chunk_size=getattr(spec, "attention_chunk_size", None),
            page_size_padded=padded(spec),
            tokens_per_state=spec.tokens_per_state,
            state_content_bytes=spec.state_content_bytes,
            num_head_slots=spec.num_head_slots,
            dcp_sharded=spec.dcp_sharded,
            block_stride_alignment=spec.block_stride_alignment,
        )
    return spec


def _promote_local_specs(specs: dict[str, Spec]) -> dict[str, Spec]:
    """Turn window / chunked layers into full-attention allocation when full layers
    exist; raise :class:`UngroupableSpecs` when the result is still mixed.  Mirrors
    ``_promote_local_kv_cache_specs`` (0.33.0)."""
    if _is_uniform(specs) or _is_uniform_type(specs):
        return dict(specs)
    values = list(specs.values())
    full_like = [s for s in values if isinstance(s, (FullAttentionSpec, MLAAttentionSpec))]
    has_local = any(isinstance(s, (SlidingWindowSpec, SlidingWindowMLASpec, ChunkedLocalAttentionSpec)) for s in values)
    block_sizes = {s.block_size for s in full_like}
    full_block = next(iter(block_sizes)) if len(block_sizes) == 1 else None
    out = dict(specs)
    if full_like and has_local:
        for name, spec in specs.items():
            if isinstance(spec, (SlidingWindowSpec, SlidingWindowMLASpec, ChunkedLocalAttentionSpec)):
                out[name] = _promote_one(spec, full_block or spec.block_size)
    if not (_is_uniform(out) or _is_uniform_type(out)):
        raise UngroupableSpecs("the layers' caches cannot be promoted to one full-attention type")
    return out


def _unify_hybrid_specs(specs: dict[str, Spec]) -> dict[str, Spec]:
    """``unify_hybrid_kv_cache_specs`` (hybrid manager disabled): promote per
    replicated / DCP-sharded subset."""
    subsets: dict[bool, dict[str, Spec]] = defaultdict(dict)
    for name, spec in specs.items():
        replicated = not isinstance(spec, MambaSpec) and not _dcp_sharded(spec) and not isinstance(
            spec, UniformTypeKVCacheSpecs
        )
        subsets[replicated][name] = spec
    out = dict(specs)
    for subset in subsets.values():
        out.update(_promote_local_specs(subset))
    return out


# --------------------------------------------------------------------------------------
# Grouping
# --------------------------------------------------------------------------------------


def _resolve_block_outermost(specs: Mapping[str, Spec], ctx: PoolContext) -> bool:
    if ctx.kv_cache_layout == "block_outermost":
        return True
    if ctx.kv_cache_layout == "layer_outermost":
        return False
    distinct = _distinct(list(specs.values()))
    has_latent = any(isinstance(s, (MLAAttentionSpec, SlidingWindowMLASpec)) for s in distinct)
    return has_latent and len({s.page_size_bytes for s in distinct}) > 1


def approximate_gcd(values: Sequence[int], *, lower_bound: int | None = None) -> int:
    """Chunk size ``d`` minimising total round-up padding ``sum(ceil(x/d)*d - x)``,
    searched over ``[lower_bound, max(values)]``, ties to the larger ``d``.
    Mirrors ``_approximate_gcd`` (vllm/v1/core/kv_cache_planning.py, 0.33.0)."""
    if not values:
        raise ValueError("values must be non-empty")
    if any(x <= 0 for x in values):
        raise ValueError(f"values must be positive, got {list(values)!r}")
    min_d = max(1, lower_bound if lower_bound is not None else 1)
    max_d = max(values)
    if min_d > max_d:
        return min_d
    best_d, best_pad = min_d, None
    for d in range(min_d, max_d + 1):
        pad = sum((d - x % d) % d for x in values)
        if best_pad is None or pad < best_pad or (pad == best_pad and d > best_d):
            best_d, best_pad = d, pad
    return best_d


def _packed_groups(specs: dict[str, Spec]) -> list[tuple[list[str], Spec]]:
    """Block-outermost packing of mixed page sizes (DeepSeek-V4 and friends).

    Layers are bucketed greedily by uniform type.  Balanced buckets that mix page
    sizes set a floor on the pattern repeats per group; ``approximate_gcd`` picks
    the repeats; state buckets (Mamba, circular buffers, and window rings when no
    repeat pattern exists) are split so a group never widens the block beyond the
    widest other group ("anchor").  Mirrors ``_get_packed_kv_cache_groups`` (0.33.0).
    """
    buckets = _bucket_by_uniform_type(specs)

    bucketed = []
    for bucket in buckets:
        uspec = UniformTypeKVCacheSpecs.of(bucket)
        by_page: dict[int, list[str]] = defaultdict(list)
        for name, spec in bucket.items():
            by_page[spec.page_size_bytes].append(name)
        balanced = len({len(v) for v in by_page.values()}) == 1
        bucketed.append((uspec, dict(by_page), balanced))

    min_repeats = max(
        (u.max_layers_per_page_size() for u, by_page, bal in bucketed if bal and len(by_page) > 1),
        default=0,
    )
    repeats = (
        approximate_gcd([u.max_layers_per_page_size() for u, _, bal in bucketed if bal], lower_bound=min_repeats)
        if min_repeats
        else None
    )

    def num_groups_for(u: UniformTypeKVCacheSpecs, bal: bool) -> int:
        if bal and repeats is not None:
            return cdiv(u.max_layers_per_page_size(), repeats)
        return 1

    def widest(by_page: dict[int, list[str]], n: int) -> int:
        return sum(cdiv(len(names), n) * page for page, names in by_page.items())

    def is_state(u: UniformTypeKVCacheSpecs) -> bool:
        if isinstance(u.first_spec, (MambaSpec, CircularBufferSpec)):
            return True
        return repeats is None and isinstance(u.first_spec, (SlidingWindowSpec, SlidingWindowMLASpec))

    anchor = max(
        (widest(by_page, len(u.layers) if is_state(u) else num_groups_for(u, bal)) for u, by_page, bal in bucketed),
        default=0,
    )

    out: list[tuple[list[str], Spec]] = []
    for u, by_page, bal in bucketed:
        n = num_groups_for(u, bal)
        if anchor and is_state(u):
            per_block = max(anchor // u.first_spec.page_size_bytes, 1)
            n = max(n, cdiv(len(u.layers), per_block))
        if n == 1:
            out.append(([name for name, _ in u.layers], u))
            continue
        pattern = list(zip(*by_page.values()))
        spec_of = u.specs
        for i in range(n):
            names = [name for rep in pattern[i::n] for name in rep]
            out.append((names, UniformTypeKVCacheSpecs.of({nm: spec_of[nm] for nm in names})))
    return out


def _unify_page_sizes(specs: dict[str, Spec], ctx: PoolContext) -> dict[str, Spec]:
    """Scale smaller pages up to the largest by growing their block size; pad Mamba
    pages (and, in 0.33.0, non-MLA attention pages that do not divide); otherwise
    raise :class:`UngroupableSpecs`.  Mirrors ``unify_kv_cache_spec_page_size``."""
    pages = {s.page_size_bytes for s in specs.values()}
    if len(pages) <= 1:
        return dict(specs)
    top = max(pages)
    out: dict[str, Spec] = {}
    for name, spec in specs.items():
        page = spec.page_size_bytes
        if page == top:
            out[name] = spec
        elif isinstance(spec, MambaSpec):
            out[name] = replace(spec, page_size_padded=top)
        elif top % page == 0:
            out[name] = spec.with_block_size(spec.block_size * (top // page))
        elif (
            ctx.pad_undividable_pages
            and not isinstance(spec, (MLAAttentionSpec, SlidingWindowMLASpec, UniformTypeKVCacheSpecs))
        ):
            out[name] = replace(spec, page_size_padded=top)
        else:
            raise UngroupableSpecs(
                f"layer {name}: its {page}-byte page does not divide the largest page ({top} bytes) "
                "and cannot be padded"
            )
        if out[name].page_size_bytes != top:
            raise UngroupableSpecs(f"layer {name}: page could not be unified to {top} bytes")
    return out


def _fallback_full_allocation(specs: dict[str, Spec]) -> list[tuple[list[str], Spec]] | None:
    """MLA next to plain window layers: allocate the windows as full attention
    (``_try_get_full_allocation_fallback_groups``, 0.33.0)."""
    values = list(specs.values())
    if any(isinstance(s, (SlidingWindowMLASpec, ChunkedLocalAttentionSpec)) for s in values):
        return None
    has_mla = any(isinstance(s, MLAAttentionSpec) for s in values)
    has_swa = any(isinstance(s, SlidingWindowSpec) for s in values)
    if not (has_mla and has_swa):
        return None
    try:
        promoted = _promote_local_specs(specs)
    except UngroupableSpecs:
        return None
    if not _is_uniform_type(promoted):
        return None
    return [(list(promoted), UniformTypeKVCacheSpecs.of(promoted))]


def _uniform_page_groups(specs: dict[str, Spec], ctx: PoolContext) -> list[tuple[list[str], Spec]]:
    """Hybrid grouping with one page size: bucket layers by spec (merging buckets
    whose specs merge), choose the group size (smallest bucket, or the largest when
    ``max < min * threshold``), split each bucket into ``cdiv(n, size)`` strided
    groups ``layers[i::num_groups]``.  Mirrors
    ``_get_kv_cache_groups_uniform_page_size`` (0.33.0)."""
    same: dict[Spec, list[str]] = {}
    for name, spec in specs.items():
        same.setdefault(spec, []).append(name)
    name_buckets: list[list[str]] = []
    spec_buckets: list[list[Spec]] = []
    for spec, names in same.items():
        for nb, sb in zip(name_buckets, spec_buckets):
            try:
                _merge([*sb, spec])
            except _Incompatible:
                continue
            nb.extend(names)
            sb.append(spec)
            break
        else:
            name_buckets.append(list(names))
            spec_buckets.append([spec])
    min_n = min(len(b) for b in name_buckets)
    max_n = max(len(b) for b in name_buckets)
    group_size = min_n
    if ctx.hybrid_group_threshold is not None and max_n < min_n * ctx.hybrid_group_threshold:
        group_size = max_n
    out: list[tuple[list[str], Spec]] = []
    for names in name_buckets:
        n_groups = cdiv(len(names), group_size)
        for i in range(n_groups):
            members = names[i::n_groups]
            out.append((members, _merge([specs[m] for m in members])))
    return out


def _make_groups(raw: list[tuple[list[str], Spec]], block_outermost: bool) -> tuple[KvCacheGroup, ...]:
    widest = max((_group_bytes(names, spec, block_outermost) for names, spec in raw), default=0)
    groups = []
    for names, spec in raw:
        if isinstance(spec, UniformTypeKVCacheSpecs):
            kind = spec.inner_kind
            page = spec.page_size_bytes
            layer_page = None
        else:
            kind = spec.kind
            layer_page = spec.page_size_bytes
            page = layer_page * len(names)
        own = _group_bytes(names, spec, block_outermost)
        padding = (widest - own) // layer_page if layer_page else 0
        groups.append(
            KvCacheGroup(
                kind=kind,
                layer_names=tuple(names),
                spec=spec,
                block_size=spec.block_size,
                page_size_bytes=page,
                padding_layers=padding,
            )
        )
    return tuple(groups)


def _group_bytes(names: Sequence[str], spec: Spec, block_outermost: bool) -> int:
    if not isinstance(spec, UniformTypeKVCacheSpecs):  # every layer holds this one spec
        page = spec.page_size_bytes
        return len(names) * (page if block_outermost else round_up(page, spec.stride_alignment_bytes))

    def layer(n: str) -> Spec:
        return spec.specs[n]

    if block_outermost:
        return sum(layer(n).page_size_bytes for n in names)
    return sum(round_up(layer(n).page_size_bytes, layer(n).stride_alignment_bytes) for n in names)


def _with_retained_tokens(specs: Mapping[str, Spec], ctx: PoolContext) -> dict[str, Spec]:
    extra = max(0, ctx.num_prefill_lookahead_tokens - 1)
    out: dict[str, Spec] = {}
    for name, spec in specs.items():
        if isinstance(spec, (SlidingWindowSpec, SlidingWindowMLASpec)) and spec.extra_retained_tokens != extra:
            spec = replace(spec, extra_retained_tokens=extra)
        out[name] = spec
    return out


def group_kv_cache_specs(layer_specs: Mapping[str, Spec], ctx: PoolContext) -> tuple[KvCacheGroup, ...]:
    """Group the layers' caches exactly as vLLM 0.33.0 does.

    Order of rules (``get_global_kv_cache_groups`` then ``get_kv_cache_groups``):
    window layers retain ``num_prefill_lookahead_tokens - 1`` extra tokens; with the
    hybrid manager disabled, window/chunked layers are promoted to full attention;
    no layers → no groups; mergeable layers → one group; one attention type → one
    :class:`UniformTypeKVCacheSpecs` group (page = sum); mixed pages under a
    block-outermost layout → packed groups (DeepSeek-V4); otherwise pages are
    unified (block size x ratio, Mamba padding) and layers grouped by type with the
    group-size threshold and strided assignment.  Raises :class:`UngroupableSpecs`
    where the release cannot group them.
    """
    specs = _with_retained_tokens(layer_specs, ctx)
    if ctx.disable_hybrid_kv_cache_manager:
        specs = _unify_hybrid_specs(specs)
    if not specs:
        return ()
    block_outermost = _resolve_block_outermost(specs, ctx)
    if _is_uniform(specs):
        raw = [(list(specs), _merge(list(specs.values())))]
    elif _is_uniform_type(specs):
        raw = [(list(specs), UniformTypeKVCacheSpecs.of(specs))]
    elif block_outermost and len({s.page_size_bytes for s in specs.values()}) > 1:
        raw = _packed_groups(specs)
    else:
        try:
            unified = _unify_page_sizes(specs, ctx)
        except UngroupableSpecs:
            fallback = _fallback_full_allocation(specs)
            if fallback is None:
                raise
            raw = fallback
        else:
            raw = _uniform_page_groups(unified, ctx)
    return _make_groups(raw, block_outermost)


def _groups_block_outermost(groups: Sequence[KvCacheGroup], ctx: PoolContext) -> bool:
    specs = {n: g.layer_spec(n) for g in groups for n in g.layer_names}
    return _resolve_block_outermost(specs, ctx)


def bytes_per_block(groups: Sequence[KvCacheGroup], ctx: PoolContext) -> int:
    """Bytes one pool block id costs: the widest group's bytes for one block.

    Layer-outermost layouts round each layer's page to its block-stride alignment
    and sum; block-outermost layouts sum the pages and round the total up to the
    lcm of every alignment.  Mirrors ``_get_kv_cache_bytes_per_block`` (0.33.0).
    """
    if not groups:
        return 0
    block_outermost = _groups_block_outermost(groups, ctx)
    widest = max(_group_bytes(g.layer_names, g.spec, block_outermost) for g in groups)
    if not block_outermost:
        return widest
    lcm = 1
    for g in groups:
        for n in g.layer_names:
            lcm = math.lcm(lcm, g.layer_spec(n).stride_alignment_bytes)
    return round_up(widest, lcm)


# --------------------------------------------------------------------------------------
# The plan
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
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

    def groups_summary(self) -> list[dict]:
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


def _bytes_per_token(groups: Sequence[KvCacheGroup], block_bytes: int) -> int | None:
    block_sizes = {g.block_size for g in groups}
    if len(block_sizes) != 1:
        return None
    for g in groups:
        for spec in g.layer_specs():
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
    avail = available_bytes
    if ctx.num_gpu_blocks_override is not None:
        notes.append(
            f"num_gpu_blocks_override={ctx.num_gpu_blocks_override} replaces "
            f"{max(available_bytes, 0) // block_bytes} blocks"
        )
        avail = ctx.num_gpu_blocks_override * block_bytes
    num_blocks = max(avail // block_bytes, 0) if avail > 0 else 0
    per_request = _blocks_per_request(groups, ctx)
    concurrency = num_blocks / per_request if per_request else 0.0
    tokens = _tokens(num_blocks, concurrency, groups, ctx)
    needed = block_bytes * per_request
    check = avail - block_bytes if ctx.reserve_null_block else avail
    estimated: int | None = None
    if avail <= 0 or check <= 0:
        fits = False
        notes.append("No available memory for the cache blocks")
        if avail <= 0:
            num_blocks, concurrency, tokens = 0, 0.0, 0
    elif needed > check:
        fits = False
        estimated = _estimate_max_model_len(groups, block_bytes, check, ctx)
        notes.append(
            f"one request at max_model_len {ctx.max_model_len} needs {needed} bytes, "
            f"more than the {check} available after the null block"
        )
    else:
        fits = True
    return PoolPlan(
        groups=groups,
        num_blocks=num_blocks,
        block_bytes=block_bytes,
        blocks_per_request=per_request,
        max_concurrency=concurrency,
        kv_cache_tokens=tokens,
        bytes_per_token=_bytes_per_token(groups, block_bytes),
        needed_bytes=needed,
        fits_one_request=fits,
        estimated_max_model_len=estimated,
        notes=tuple(notes),
        ctx=ctx,
    )


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
    concurrency = num_blocks / per_request if per_request else 0.0
    check = available_bytes - block_bytes
    fits = available_bytes > 0 and check > 0 and request <= check
    return PoolPlan(
        groups=groups,
        num_blocks=num_blocks,
        block_bytes=block_bytes,
        blocks_per_request=per_request,
        max_concurrency=concurrency,
        kv_cache_tokens=_tokens(num_blocks, concurrency, groups, ctx),
        bytes_per_token=None,
        needed_bytes=request,
        fits_one_request=fits,
        estimated_max_model_len=None,
        notes=(note,),
        ctx=ctx,
    )


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


@dataclass(frozen=True)
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
