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


class UngroupableSpecs(BadInput):
    """The release's grouping rules cannot put these layers into one pool (page sizes
    that neither divide nor may be padded).  Callers fall back to
    :func:`plan_pool_ungrouped` and record a provenance note."""



# --------------------------------------------------------------------------------------
# Local-attention promotion (HMA disabled / allocation fallback)
# --------------------------------------------------------------------------------------


def _promote_one(spec: Spec, block_size: int) -> Spec:
    def padded(s: Any) -> int | None:
        if s.page_size_padded is None:
            return None
        page: int = max(s.page_size_padded, s.unpadded_page_size_bytes * block_size // s.block_size)
        return page

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
