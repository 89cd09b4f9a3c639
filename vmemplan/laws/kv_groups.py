"""KV cache groups, as vLLM 0.33.0 forms them: which layers share one block table, and what one
pool block id costs across them.

``group_kv_cache_specs`` mirrors ``get_kv_cache_groups`` (vllm/v1/core/kv_cache_utils.py and
kv_cache_planning.py, 0.33.0): uniform layers make one group; one attention type makes one
uniform-type group; mixed pages under a block-outermost layout are packed (DeepSeek-V4);
otherwise pages are unified and layers grouped by type.  ``bytes_per_block`` mirrors
``_get_kv_cache_bytes_per_block``.  Sizing the pool from these groups is
:mod:`vmemplan.laws.kv_pool`'s job.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Literal

from vmemplan.core.errors import UsageError
from vmemplan.core.frozen import frozen
from vmemplan.core.kv_specs import (
    LATENT_SPECS,
    WINDOW_SPECS,
    CircularBufferSpec,
    MambaSpec,
    Spec,
    UniformTypeKVCacheSpecs,
)
from vmemplan.core.units import cdiv, round_up
from vmemplan.laws.kv_spec_relations import (
    UngroupableSpecs,
    _bucket_by_uniform_type,
    _distinct,
    _fallback_full_allocation,
    _Incompatible,
    _is_uniform,
    _is_uniform_type,
    _merge,
    _unify_hybrid_specs,
)

__all__ = [
    "PoolContext",
    "KvCacheGroup",
    "UngroupableSpecs",
    "group_kv_cache_specs",
    "bytes_per_block",
    "approximate_gcd",
]

TokensFormula = Literal["blocks_x_block_size", "blocks_div_groups_x_min_block", "concurrency_x_max_model_len"]
LayoutChoice = Literal["auto", "layer_outermost", "block_outermost"]


@frozen
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
        # num_gpu_blocks_override: any int, as vLLM takes it (vllm/config/cache.py::CacheConfig); 0 or
        # less leaves no block beside the null block: "No available memory for the cache blocks"

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


@frozen
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
        return list(self._layer_specs)

    # The group is frozen, so what is derived from its layers is computed once (a sweep sizes
    # the same groups at every point): cached_property writes the instance __dict__ directly.
    @functools.cached_property
    def _layer_specs(self) -> tuple[Spec, ...]:
        return tuple(self.layer_spec(n) for n in self.layer_names)

    @functools.cached_property
    def distinct_specs(self) -> tuple[Spec, ...]:
        """The group's layer specs, each distinct one once, in first-seen order."""
        return tuple(_distinct(self._layer_specs))

    @functools.cached_property
    def _bytes_by_layout(self) -> dict[bool, int]:
        return {}

    def group_bytes(self, block_outermost: bool) -> int:
        """The group's bytes for one block (see :func:`bytes_per_block`)."""
        cache = self._bytes_by_layout
        if block_outermost not in cache:
            cache[block_outermost] = _group_bytes(self.layer_names, self.spec, block_outermost)
        return cache[block_outermost]

    def pages_per_request(self, ctx: PoolContext) -> int:
        """Block ids one request at max_model_len claims in this group."""
        return self.spec.max_memory_usage_pages(ctx)


# --------------------------------------------------------------------------------------
# Grouping
# --------------------------------------------------------------------------------------


def _resolve_block_outermost(specs: Mapping[str, Spec], ctx: PoolContext) -> bool:
    if ctx.kv_cache_layout == "block_outermost":
        return True
    if ctx.kv_cache_layout == "layer_outermost":
        return False
    distinct = _distinct(list(specs.values()))
    has_latent = any(isinstance(s, LATENT_SPECS) for s in distinct)
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
        return repeats is None and isinstance(u.first_spec, WINDOW_SPECS)

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
            and not isinstance(spec, (*LATENT_SPECS, UniformTypeKVCacheSpecs))
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
        if isinstance(spec, WINDOW_SPECS) and spec.extra_retained_tokens != extra:
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
    if ctx.kv_cache_layout in ("block_outermost", "layer_outermost"):
        return ctx.kv_cache_layout == "block_outermost"
    # the layout depends only on the distinct specs (_resolve_block_outermost)
    distinct = _distinct([s for g in groups for s in g.distinct_specs])
    return _resolve_block_outermost({str(i): s for i, s in enumerate(distinct)}, ctx)


def bytes_per_block(groups: Sequence[KvCacheGroup], ctx: PoolContext) -> int:
    """Bytes one pool block id costs: the widest group's bytes for one block.

    Layer-outermost layouts round each layer's page to its block-stride alignment
    and sum; block-outermost layouts sum the pages and round the total up to the
    lcm of every alignment.  Mirrors ``_get_kv_cache_bytes_per_block`` (0.33.0).
    """
    if not groups:
        return 0
    block_outermost = _groups_block_outermost(groups, ctx)
    widest = max(g.group_bytes(block_outermost) for g in groups)
    if not block_outermost:
        return widest
    lcm = 1
    for g in groups:
        for spec in g.distinct_specs:
            lcm = math.lcm(lcm, spec.stride_alignment_bytes)
    return round_up(widest, lcm)
