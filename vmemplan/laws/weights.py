"""Weights per rank: the bytes vLLM's "Model loading took" reports.

vLLM measures weights as the torch-allocated bytes gained across ``load_model``
(vllm/v1/worker/gpu_model_runner.py::GPUModelRunner.load_model, 0.33.0, through
``DeviceMemoryProfiler``), so the figure is every parameter tensor the rank holds, at the
width it is stored in, plus persistent buffers created while the model is built (the rotary
cos/sin cache).  The adapter states the tensors; this law only prices them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from vmemplan.model_config import dtype_bytes
from vmemplan.models.base import WeightTensor

__all__ = ["WeightScheme", "WeightBreakdown", "weight_bytes_per_rank", "parameter_count"]


class WeightScheme(Protocol):
    """How a quantization scheme stores a tensor.  Returns None to use the plain width."""

    name: str

    def tensor_bytes(self, tensor: WeightTensor, model_dtype_bytes: int) -> int | None: ...


@dataclass(frozen=True)
class WeightBreakdown:
    """Bytes one rank holds, by what they are."""

    total_bytes: int
    by_kind: dict[str, int]
    parameters: int  # parameter elements on this rank (buffers excluded)
    buffer_bytes: int
    scheme: str  # "bf16", "awq-4bit", ...


def parameter_count(tensors: Iterable[WeightTensor]) -> int:
    """Elements of every parameter tensor (persistent buffers excluded)."""
    return sum(t.elements for t in tensors if t.kind != "buffer")


def weight_bytes_per_rank(
    tensors: Iterable[WeightTensor],
    *,
    model_dtype: str,
    scheme: WeightScheme | None = None,
) -> WeightBreakdown:
    """Sum the bytes of every tensor a rank holds.

    Each tensor costs ``rows × cols × count × bytes`` at the model dtype (or its own
    ``dtype``), unless ``scheme`` prices a quantizable tensor differently (packed integers,
    scales, zero points).  Embeddings and norms are never quantized here: vLLM keeps them at
    the checkpoint width.
    """
    width = dtype_bytes(model_dtype)
    by_kind: dict[str, int] = {}
    params = 0
    buffers = 0
    for t in tensors:
        nbytes = None
        if scheme is not None and (t.quantizable or t.kind in ("expert", "lm_head", "embedding")):
            nbytes = scheme.tensor_bytes(t, width)
        if nbytes is None:
            nbytes = t.elements * (dtype_bytes(t.dtype) if t.dtype else width)
        by_kind[t.kind] = by_kind.get(t.kind, 0) + nbytes
        if t.kind == "buffer":
            buffers += nbytes
        else:
            params += t.elements
    return WeightBreakdown(
        total_bytes=sum(by_kind.values()),
        by_kind=by_kind,
        parameters=params,
        buffer_bytes=buffers,
        scheme=scheme.name if scheme is not None else model_dtype,
    )
