"""Weights per rank: the bytes vLLM's "Model loading took" reports.

vLLM measures weights as the torch-allocated bytes gained across ``load_model``
(vllm/v1/worker/gpu_model_runner.py::GPUModelRunner.load_model, 0.33.0, through
``DeviceMemoryProfiler``), so the figure is every parameter tensor the rank holds, at the
width it is stored in, plus persistent buffers created while the model is built (the rotary
cos/sin cache).  The adapter states the tensors; this law only prices them.

The figure is what PyTorch's CUDA caching allocator counts as allocated, not the sum of
tensor sizes: a tensor of 10 MiB or more gets its own segment rounded up to 2 MiB, and when
the unused tail of that segment is 1 MiB or less the allocator does not split it off, so the
whole segment is counted (``cuda_allocated_bytes``).  Shapes whose byte size is not a multiple
of 2 MiB (Qwen's hidden size 3584 = 7 × 512, for instance) therefore load a little heavier than
their parameter count says; Llama's power-of-two shapes do not.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from vmemplan.core.frozen import frozen
from vmemplan.core.graph import WeightTensor
from vmemplan.core.units import dtype_bytes

__all__ = [
    "WeightScheme",
    "WeightBreakdown",
    "weight_bytes_per_rank",
    "parameter_count",
    "cuda_allocated_bytes",
]


class WeightScheme(Protocol):
    """How a quantization scheme stores a tensor.  Returns None to use the plain width.

    A scheme may also offer ``tensor_parts(tensor, model_dtype_bytes)``: the bytes of each
    separate tensor (packed weight, scales, zero points, ...) of ONE allocation unit of
    ``tensor`` (``tensor.num_allocations`` units in all) as ``(name, bytes)``, or
    ``(name, bytes, units)`` for a part held by only some units (layers a config leaves
    unquantized), or None for the plain width.  When
    present it is used, so that each part is rounded as the CUDA allocator rounds it.
    """

    name: str

    def tensor_bytes(self, tensor: WeightTensor, model_dtype_bytes: int) -> int | None: ...


_MiB = 1 << 20
_BLOCK = 512  # c10/cuda/CUDACachingAllocator.cpp kMinBlockSize
_SMALL = _MiB  # kSmallSize: requests up to here come from the small pool
_MIN_LARGE_ALLOC = 10 * _MiB  # kMinLargeAlloc: from here a request gets its own segment
_ROUND_LARGE = 2 * _MiB  # kRoundLarge: such segments are rounded up to 2 MiB


def cuda_allocated_bytes(nbytes: int) -> int:
    """Bytes PyTorch's CUDA caching allocator counts as allocated for one fresh tensor.

    Mirrors c10/cuda/CUDACachingAllocator.cpp (``round_size``, ``get_allocation_size``,
    ``should_split``; default settings, no expandable segments), which vLLM's
    ``DeviceMemoryProfiler`` reads through ``torch.cuda.max_memory_allocated``
    (vllm/utils/mem_utils.py, 0.33.0):

    * every request is rounded up to a multiple of 512 bytes;
    * a request of 10 MiB or more gets a new segment of ``ceil(n / 2 MiB) × 2 MiB``; the
      block is split only when more than 1 MiB would remain, otherwise the whole segment is
      the block and counts as allocated;
    * smaller requests are carved out of shared 2 MiB / 20 MiB segments (the tail case at the
      end of a shared segment is not modelled: it is at most 1 MiB once per segment).

    Zero-size tensors allocate nothing.
    """
    if nbytes <= 0:
        return 0
    rounded = -(-nbytes // _BLOCK) * _BLOCK
    if rounded < _MIN_LARGE_ALLOC:
        return rounded
    segment = -(-rounded // _ROUND_LARGE) * _ROUND_LARGE
    return segment if segment - rounded <= _SMALL else rounded


@frozen
class WeightBreakdown:
    """Bytes one rank holds, by what they are."""

    total_bytes: int
    by_kind: dict[str, int]
    parameters: int  # parameter elements on this rank (buffers excluded)
    buffer_bytes: int
    scheme: str  # "bf16", "awq-4bit", ...
    # the plain sum of tensor sizes, before the allocator's rounding
    unrounded_bytes: int = 0


def parameter_count(tensors: Iterable[WeightTensor]) -> int:
    """Elements of every parameter tensor (persistent buffers excluded)."""
    return sum(t.elements for t in tensors if t.kind != "buffer")


def _quantized(source: WeightTensor | None, scheme: WeightScheme | None, width: int) -> bool:
    """Whether ``scheme`` stores ``source`` below the model dtype (then a model-dtype copy of it
    is new memory)."""
    if source is None or scheme is None or not source.quantizable:
        return False
    parts_of = getattr(scheme, "tensor_parts", None)
    if parts_of is not None:
        named = parts_of(source, width)
        if named is None:
            return False
        units = max(1, source.num_allocations)
        priced: int = sum(int(p[1]) * (int(p[2]) if len(p) > 2 else units) for p in named)
    else:
        q = scheme.tensor_bytes(source, width)
        if q is None:
            return False
        priced = q
    return priced < source.elements * width


def weight_bytes_per_rank(
    tensors: Iterable[WeightTensor],
    *,
    model_dtype: str,
    scheme: WeightScheme | None = None,
    allocator_rounding: bool = False,
) -> WeightBreakdown:
    """Sum the bytes of every tensor a rank holds.

    Each tensor costs ``rows × cols × count × bytes`` at the model dtype (or its own
    ``dtype``), unless ``scheme`` prices a quantizable tensor differently (packed integers,
    scales, zero points).  Embeddings and norms are never quantized here: vLLM keeps them at
    the checkpoint width.  With ``allocator_rounding`` (pass True to reproduce the logged
figure; off by default only to keep the plain sum for callers that compare shards) each
separate tensor —
    ``tensor.num_allocations`` of them, and each part a scheme lists — is rounded as
    :func:`cuda_allocated_bytes` says, which is what "Model loading took" measures.
    """
    width = dtype_bytes(model_dtype)
    by_kind: dict[str, int] = {}
    params = 0
    buffers = 0
    unrounded = 0
    parts_of = getattr(scheme, "tensor_parts", None) if scheme is not None else None
    tensors = list(tensors)
    by_name = {t.name: t for t in tensors}
    for t in tensors:
        if t.copy_of is not None and not _quantized(by_name.get(t.copy_of), scheme, width):
            continue  # a view of an unquantized tensor: no storage of its own
        units = max(1, t.num_allocations)
        parts: list[tuple[int, int]] | None = None
        if scheme is not None and (t.quantizable or t.kind in ("expert", "lm_head", "embedding")):
            if parts_of is not None:
                named = parts_of(t, width)
                if named is not None:
                    # (name, bytes) repeats once per allocation unit; (name, bytes, n) n times
                    parts = [(p[1], p[2] if len(p) > 2 else units) for p in named]
            else:
                nbytes_q = scheme.tensor_bytes(t, width)
                if nbytes_q is not None:
                    parts = [(nbytes_q // units, units)]
        if parts is None:
            parts = [(t.elements * (dtype_bytes(t.dtype) if t.dtype else width) // units, units)]
        raw = sum(b * n for b, n in parts)
        nbytes = sum(cuda_allocated_bytes(b) * n for b, n in parts) if allocator_rounding else raw
        unrounded += raw
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
        unrounded_bytes=unrounded,
    )
