"""LoRA: the stacked adapter buffers vLLM allocates with the weights (``--enable-lora``).

With LoRA enabled vLLM wraps every linear layer an adapter may target and, while loading the
model, allocates for each one zero-filled "stacked" buffers holding ``max_loras`` adapters of
rank ``max_lora_rank`` at ``lora_dtype`` (vllm/lora/model_manager.py::LoRAModelManager
._create_lora_modules -> vllm/lora/utils.py::from_layer -> ``create_lora_weights``; 0.33.0).
They are part of "Model loading took", so the KV pool shrinks by exactly their bytes.

Per wrapped layer and TP rank (``r`` = max_lora_rank, ``n`` = max_loras):

* column-parallel (vllm/lora/layers/column_parallel_linear.py::ColumnParallelLinearWithLoRA,
  MergedColumnParallelLinearWithLoRA, MergedQKVParallelLinearWithLoRA.create_lora_weights):
  per output slice, ``lora_a`` = n × r × input (r / tp with ``--fully-sharded-loras``) and
  ``lora_b`` = n × (slice output / tp) × r;
* row-parallel (vllm/lora/layers/base_linear.py::BaseLinearLayerWithLoRA.create_lora_weights,
  row_parallel_linear.py: ``input_size`` = the input per partition): ``lora_a`` = n × r ×
  (input / tp), ``lora_b`` = n × output × r (output / tp with ``--fully-sharded-loras``).

A dense decoder layer has four: ``qkv_proj`` (slices q, k, v), ``o_proj``, ``gate_up_proj``
(slices gate, up) and ``down_proj``.  The logits processor is never wrapped in 0.33.0
(vllm/lora/layers/logits_processor.py::can_replace_layer returns False), so ``lm_head`` gets
no buffers.  The punica wrapper's index tensors (a few int tensors of max_num_batched_tokens)
are under a megabyte and left out.  MoE experts (FusedMoEWithLoRA) are not modelled here.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.frozen import frozen
from vmemplan.laws.weights import cuda_allocated_bytes

__all__ = ["LoraConfig", "LoraBytes", "lora_stacked_bytes", "dense_lora_layers"]

_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4}


@frozen
class LoraConfig:
    """vLLM's LoRAConfig fields that size the buffers (vllm/config/lora.py, 0.33.0 defaults:
    max_loras 1, max_lora_rank 16, lora_dtype auto = the model dtype)."""

    max_loras: int = 1
    max_lora_rank: int = 16
    lora_dtype: str = "auto"
    fully_sharded_loras: bool = False


@frozen
class LinearShape:
    """One wrapped linear layer: ``parallel`` is "column" or "row"; ``output_slices`` are the
    full (unsharded) output widths of its packed slices."""

    name: str
    parallel: str
    input_size: int
    output_slices: tuple[int, ...]


@frozen
class LoraBytes:
    total_bytes: int
    tensors: int
    per_layer_bytes: int
    layers: int


def dense_lora_layers(*, hidden_size: int, num_heads: int, num_kv_heads: int, head_dim: int,
                      intermediate_size: int) -> tuple[LinearShape, ...]:
    """The four wrapped linears of one dense decoder layer (Llama-style, vLLM's packed names)."""
    return (
        LinearShape("qkv_proj", "column", hidden_size,
                    (num_heads * head_dim, num_kv_heads * head_dim, num_kv_heads * head_dim)),
        LinearShape("o_proj", "row", num_heads * head_dim, (hidden_size,)),
        LinearShape("gate_up_proj", "column", hidden_size, (intermediate_size, intermediate_size)),
        LinearShape("down_proj", "row", intermediate_size, (hidden_size,)),
    )


def _slice_out(width: int, tp: int, *, kv_heads: int | None = None, head_dim: int | None = None) -> int:
    """A column slice's output per rank; KV heads are replicated when tp exceeds them
    (vllm/model_executor/layers/linear.py::QKVParallelLinear)."""
    if kv_heads is not None and head_dim is not None:
        return max(1, kv_heads // tp) * head_dim
    return width // tp


def lora_stacked_bytes(layers: tuple[LinearShape, ...], num_layers: int, cfg: LoraConfig, *, model_dtype: str,
                       tensor_parallel_size: int = 1, num_kv_heads: int | None = None,
                       head_dim: int | None = None) -> LoraBytes:
    """Bytes of every stacked LoRA buffer on one rank, each tensor rounded as PyTorch's caching
    allocator rounds a fresh allocation (they are allocated one by one while loading)."""
    tp = tensor_parallel_size
    width = _DTYPE_BYTES[model_dtype if cfg.lora_dtype in (None, "auto") else cfg.lora_dtype]
    n, r = cfg.max_loras, cfg.max_lora_rank
    per_layer = 0
    tensors = 0
    for lin in layers:
        if lin.parallel == "column":
            a_rows = r // tp if cfg.fully_sharded_loras else r
            for i, out in enumerate(lin.output_slices):
                kv = lin.name == "qkv_proj" and i > 0
                out_rank = _slice_out(out, tp, kv_heads=num_kv_heads if kv else None,
                                      head_dim=head_dim if kv else None)
                per_layer += cuda_allocated_bytes(n * a_rows * lin.input_size * width)
                per_layer += cuda_allocated_bytes(n * out_rank * r * width)
                tensors += 2
        else:
            (out,) = lin.output_slices
            b_rows = out // tp if cfg.fully_sharded_loras else out
            per_layer += cuda_allocated_bytes(n * r * (lin.input_size // tp) * width)
            per_layer += cuda_allocated_bytes(n * b_rows * r * width)
            tensors += 2
    return LoraBytes(total_bytes=per_layer * num_layers, tensors=tensors * num_layers, per_layer_bytes=per_layer,
                     layers=num_layers)


def lora_config_from(inputs: Any) -> LoraConfig | None:
    """The LoRA config a request asks for (None without ``--enable-lora``)."""
    if not getattr(inputs, "enable_lora", None):
        return None
    return LoraConfig(
        max_loras=int(inputs.max_loras or 1), max_lora_rank=int(inputs.max_lora_rank or 16),
        lora_dtype=str(inputs.lora_dtype or "auto"), fully_sharded_loras=bool(inputs.fully_sharded_loras),
    )


def lora_bytes_for(req: Any, ctx: Any) -> tuple[int, str | None]:
    """(bytes, provenance text) of the LoRA buffers one rank of ``req`` holds; (0, None)
    without LoRA."""
    cfg = getattr(req, "lora", None)
    if cfg is None:
        return 0, None
    c = req.config
    layer_range = getattr(req.adapter, "layer_range", None)
    if layer_range is not None:
        start, end = layer_range(ctx)
        layers_here = end - start
    else:
        layers_here = -(-c.num_hidden_layers // req.pipeline_parallel_size)
    shapes = dense_lora_layers(hidden_size=c.hidden_size, num_heads=c.num_attention_heads,
                               num_kv_heads=c.num_key_value_heads, head_dim=c.head_dim,
                               intermediate_size=c.intermediate_size)
    b = lora_stacked_bytes(shapes, layers_here, cfg, model_dtype=req.dtype, tensor_parallel_size=req.tensor_parallel_size,
                           num_kv_heads=c.num_key_value_heads, head_dim=c.head_dim)
    text = (f"LoRA stacked buffers: {b.layers} layers × (qkv_proj, o_proj, gate_up_proj, down_proj), max_loras "
            f"{cfg.max_loras} × rank {cfg.max_lora_rank} at {cfg.lora_dtype if cfg.lora_dtype != 'auto' else req.dtype}"
            f"{', fully sharded' if cfg.fully_sharded_loras else ''}, tp={req.tensor_parallel_size}: {b.total_bytes:,} B "
            "(vllm/lora/layers/*.py::create_lora_weights, 0.33.0)")
    return b.total_bytes, text
