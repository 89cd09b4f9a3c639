"""``--cpu-offload-gb`` and the prefetch offloader: decoder-layer weights vLLM keeps in host memory.

Prefetch offloading (``--offload-group-size G --offload-num-in-group N --offload-prefetch-step S``,
vllm/model_executor/offloader/prefetch.py::PrefetchOffloader, 0.33.0): of each group of G
decoder layers on the rank (counted from the stage's first layer), the last N live in host
memory (``module_index % G >= G - N`` in ``wrap_modules``); ``post_init`` allocates a
StaticBufferPool on the GPU holding S copies of every distinct offloaded parameter
(``torch.empty_strided`` per slot), which the layers are copied into ahead of their forward.
The GPU keeps the rest of the weights plus that pool.

UVA offloading (``--cpu-offload-gb``):

vllm/model_executor/offloader/uva.py::UVAOffloader._maybe_offload_to_cpu (0.33.0): while the
model is built, ``make_layers`` hands each decoder layer to the offloader, first layer first;
its parameters, in registration order, move to host memory (pinned, read by the GPU over UVA)
until ``cpu_offload_gb × 2^30`` bytes have moved: the check comes before each parameter, so
the last one can overshoot the limit.  The embedding, the final norm and ``lm_head`` are not
decoder layers and stay on the GPU.  What moved is not on the GPU after loading, so "Model
loading took" and the KV pool differ by exactly those bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from vmemplan.core.units import dtype_bytes
from vmemplan.laws.weights import cuda_allocated_bytes

__all__ = ["uva_offloaded_bytes", "prefetch_offloaded_bytes", "offloaded_bytes_for", "GIB_BYTES"]

GIB_BYTES = 1024**3


def uva_offloaded_bytes(per_layer_param_bytes: Sequence[int], num_layers: int, limit_bytes: int) -> int:
    """Bytes moved to the host: parameters of layer 0, 1, ... in order until ``limit_bytes``
    is reached (checked before each parameter, as vLLM checks it)."""
    moved = 0
    if limit_bytes <= 0:
        return 0
    for _ in range(num_layers):
        for nbytes in per_layer_param_bytes:
            if moved >= limit_bytes:
                return moved
            moved += nbytes
    return moved


def prefetch_offloaded_bytes(per_layer_param_bytes: Sequence[int], num_layers: int, *, group_size: int,
                             num_in_group: int, prefetch_step: int) -> tuple[int, int]:
    """(bytes moved to the host, bytes of the GPU static buffer pool) of the prefetch offloader."""
    offloaded = sum(1 for i in range(num_layers) if i % group_size >= group_size - num_in_group)
    layer = sum(per_layer_param_bytes)
    return offloaded * layer, (prefetch_step * layer if offloaded else 0)


def _per_layer_params(tensors: Iterable[Any], num_layers: int, width: int) -> list[int]:
    """One decoder layer's parameters, in the adapter's (= registration) order, each priced as
    the caching allocator prices it."""
    out: list[int] = []
    for t in tensors:
        if t.kind in ("embedding", "lm_head", "buffer") or t.count % num_layers:
            continue
        per = t.count // num_layers
        w = dtype_bytes(t.dtype) if getattr(t, "dtype", None) else width
        out.extend([cuda_allocated_bytes(t.rows * t.cols * w)] * per)
    return out


def offloaded_bytes_for(req: Any, ctx: Any, tensors: Sequence[Any]) -> tuple[int, str | None]:
    """(net bytes, provenance text) of the weights the offloader moves off one rank: what
    ``--cpu-offload-gb`` moves, or what the prefetch offloader moves less its GPU buffer pool."""
    limit = int(getattr(req, "cpu_offload_bytes", 0) or 0)
    prefetch = getattr(req, "prefetch_offload", None)
    if limit <= 0 and prefetch is None:
        return 0, None
    layer_range = getattr(req.adapter, "layer_range", None)
    if layer_range is not None:
        start, end = layer_range(ctx)
        layers = end - start
    else:
        layers = -(-req.config.num_hidden_layers // req.pipeline_parallel_size)
    per_layer = _per_layer_params(tensors, req.config.num_hidden_layers, dtype_bytes(req.dtype))
    if prefetch is not None:
        moved, pool = prefetch_offloaded_bytes(per_layer, layers, group_size=prefetch.group_size,
                                               num_in_group=prefetch.num_in_group,
                                               prefetch_step=prefetch.prefetch_step)
        return moved - pool, (
            f"--offload-group-size {prefetch.group_size} --offload-num-in-group {prefetch.num_in_group}: "
            f"{moved:,} B of decoder-layer parameters in host memory, less a GPU buffer pool of {pool:,} B "
            f"({prefetch.prefetch_step} layer(s) prefetched) (vllm/model_executor/offloader/prefetch.py::"
            "PrefetchOffloader, 0.33.0)")
    moved = uva_offloaded_bytes(per_layer, layers, limit)
    text = (f"--cpu-offload-gb {limit / GIB_BYTES:g}: {moved:,} B of decoder-layer parameters in host memory, "
            "layer by layer until the limit (vllm/model_executor/offloader/uva.py::UVAOffloader, 0.33.0)")
    return moved, text
