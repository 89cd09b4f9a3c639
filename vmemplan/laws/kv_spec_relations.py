"""Relations between KV cache specs that decide how vLLM 0.33.0 groups them: merging equal
specs, the uniform-type test, and promoting local-attention specs to full attention when the
hybrid allocator is off.

Split out of :mod:`vmemplan.laws.kv_groups` (the grouping itself); mirrors
vllm/v1/kv_cache_interface.py (``KVCacheSpec.merge``, ``UniformTypeKVCacheSpecs.is_uniform_type``)
and vllm/v1/core/kv_cache_utils.py (``unify_hybrid_kv_cache_specs``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import fields, replace
from typing import Any, cast

from vmemplan.core.errors import BadInput
from vmemplan.core.kv_specs import (
    LOCAL_SPECS,
    WINDOW_SPECS,
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
)

# --------------------------------------------------------------------------------------
# Spec relations (merge / uniform type)
# --------------------------------------------------------------------------------------


class _Incompatible(Exception):
    pass


def _field_values(spec: Any, skip: tuple[str, ...] = ()) -> tuple[Any, ...]:
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
        full = cast(Sequence[FullAttentionSpec], specs)
        windows = {s.sliding_window for s in full if s.sliding_window is not None}
        chunks = {s.attention_chunk_size for s in full if s.attention_chunk_size is not None}
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
            isinstance(s, WINDOW_SPECS) and s.sliding_window == first.sliding_window
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


class UngroupableSpecs(BadInput):
    """The release's grouping rules cannot put these layers into one pool (page sizes
    that neither divide nor may be padded).  Callers fall back to
    :func:`plan_pool_ungrouped` and record a provenance note."""



# --------------------------------------------------------------------------------------
# Local-attention promotion (HMA disabled / allocation fallback)
# --------------------------------------------------------------------------------------


def _carried(spec: Spec, target: type[Any]) -> dict[str, Any]:
    """The fields of ``spec`` that the spec class ``target`` has too (same name, same meaning)."""
    own = {f.name for f in fields(spec)}
    return {f.name: getattr(spec, f.name) for f in fields(target) if f.name in own}


def _promote_one(spec: Spec, block_size: int) -> Spec:
    """A window / chunked layer as the full-attention allocation vLLM gives it: a window-MLA
    spec becomes MLA (its tokens per state the compress ratio), a window or chunked spec full
    attention keeping its window / chunk; every shared field carries over, the padded page
    scales with the new block size."""
    if not isinstance(spec, LOCAL_SPECS):
        return spec
    page_size_padded = None
    if spec.page_size_padded is not None:
        page_size_padded = max(spec.page_size_padded, spec.unpadded_page_size_bytes * block_size // spec.block_size)
    if isinstance(spec, SlidingWindowMLASpec):
        return MLAAttentionSpec(**{**_carried(spec, MLAAttentionSpec), "block_size": block_size,
                                   "compress_ratio": spec.tokens_per_state, "page_size_padded": page_size_padded})
    return FullAttentionSpec(**{**_carried(spec, FullAttentionSpec), "block_size": block_size,
                                "page_size_padded": page_size_padded})


def _promote_local_specs(specs: dict[str, Spec]) -> dict[str, Spec]:
    """Turn window / chunked layers into full-attention allocation when full layers
    exist; raise :class:`UngroupableSpecs` when the result is still mixed.  Mirrors
    ``_promote_local_kv_cache_specs`` (0.33.0)."""
    if _is_uniform(specs) or _is_uniform_type(specs):
        return dict(specs)
    values = list(specs.values())
    full_like = [s for s in values if isinstance(s, (FullAttentionSpec, MLAAttentionSpec))]
    has_local = any(isinstance(s, LOCAL_SPECS) for s in values)
    block_sizes = {s.block_size for s in full_like}
    full_block = next(iter(block_sizes)) if len(block_sizes) == 1 else None
    out = dict(specs)
    if full_like and has_local:
        for name, spec in specs.items():
            if isinstance(spec, LOCAL_SPECS):
                out[name] = _promote_one(spec, full_block or spec.block_size)
    if not (_is_uniform(out) or _is_uniform_type(out)):
        raise UngroupableSpecs("the layers' caches cannot be promoted to one full-attention type")
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
