"""``--cpu-offload-gb``: decoder-layer weights vLLM keeps in host memory (UVA offloading).

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

__all__ = ["uva_offloaded_bytes", "offloaded_bytes_for", "GIB_BYTES"]

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
    """(bytes, provenance text) of the weights ``--cpu-offload-gb`` moves off one rank."""
    limit = int(getattr(req, "cpu_offload_bytes", 0) or 0)
    if limit <= 0:
        return 0, None
    layer_range = getattr(req.adapter, "layer_range", None)
    if layer_range is not None:
        start, end = layer_range(ctx)
        layers = end - start
    else:
        layers = -(-req.config.num_hidden_layers // req.pipeline_parallel_size)
    per_layer = _per_layer_params(tensors, req.config.num_hidden_layers, dtype_bytes(req.dtype))
    moved = uva_offloaded_bytes(per_layer, layers, limit)
    text = (f"--cpu-offload-gb {limit / GIB_BYTES:g}: {moved:,} B of decoder-layer parameters in host memory, "
            "layer by layer until the limit (vllm/model_executor/offloader/uva.py::UVAOffloader, 0.33.0)")
    return moved, text
