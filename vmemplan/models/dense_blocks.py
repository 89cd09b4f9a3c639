"""Building blocks the dense, encoder and multimodal families share (helpers only: no adapter
is registered here).

* :class:`EncoderOnly`: what every encoder-only embedding model (BERT, RoBERTa, ModernBERT)
  answers the same way: the pooling runner, no pipeline parallelism, no KV cache;
* :func:`llama_layer_tensors`: the four linears of ``count`` Llama decoder layers;
* :func:`rope_cache_per_base`: one rotary cache per distinct RoPE base of a stage's layers;
* :func:`kv_spec_fields`: the fields every attention layer's KV cache spec shares.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.core.kv_specs import kv_dtype_bytes
from vmemplan.core.units import dtype_bytes
from vmemplan.models.base import Adapter

__all__ = ["EncoderOnly", "kv_spec_fields", "llama_layer_tensors", "rope_cache_per_base"]


class EncoderOnly(Adapter):
    """An encoder-only embedding model (vLLM --runner pooling) whose every attention layer is an
    ``EncoderOnlyAttention``: its get_kv_cache_spec returns None
    (vllm/model_executor/layers/attention/encoder_only_attention.py, 0.33.0), so the model owns
    no KV cache and the pool holds only the null block.  TP must divide the attention heads
    (bert.py::BertSelfAttention asserts ``total_num_heads % tp_size == 0``; ModernBERT is held to
    the same) and these model files support no pipeline parallelism."""

    reads_max_model_len = False
    default_runner = "pooling"
    #: what validate_parallel says to --pipeline-parallel-size above 1
    pp_refusal = "this encoder does not support pipeline parallelism in vLLM"

    def validate_parallel(self, ctx: GraphContext) -> None:
        heads = self.config.num_attention_heads
        if heads % ctx.tensor_parallel_size:
            raise UsageError(f"--tensor-parallel-size {ctx.tensor_parallel_size} does not divide the {heads} "
                             "attention heads", hint=f"use a divisor of {heads}")
        if ctx.pipeline_parallel_size != 1:
            raise UsageError(self.pp_refusal, hint="use --pipeline-parallel-size 1")

    def derived_max_model_len(self) -> int:
        return int(self.config.max_position_embeddings)

    def prefix_caching_supported(self) -> bool:
        return False

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        return {}  # EncoderOnlyAttention.get_kv_cache_spec -> None for every layer

    def notes(self) -> tuple[str, ...]:
        return ("encoder-only embedding model (vLLM --runner pooling): bidirectional EncoderOnlyAttention, "
                "no KV cache; vLLM allocates only the null block",)


def llama_layer_tensors(cfg: Any, *, tp: int, kv_rows: int, count: int, attn_prefix: str = "self_attn.",
                        gated: bool = True) -> list[WeightTensor]:
    """``qkv_proj`` (QKVParallelLinear), ``o_proj`` (RowParallelLinear), ``gate_up_proj``
    (MergedColumnParallelLinear; a plain ``up_proj`` when not ``gated``) and ``down_proj``
    (RowParallelLinear) of ``count`` decoder layers, without biases, as
    vllm/model_executor/models/llama.py::LlamaAttention / LlamaMLP (0.33.0) build them: the
    query heads and the MLP width split by ``tp``, ``kv_rows`` the per-rank K (= V) rows."""
    h, hd = cfg.hidden_size, cfg.head_dim
    q_rows = cfg.num_attention_heads // tp * hd
    inter = cfg.intermediate_size // tp
    return [
        WeightTensor(f"{attn_prefix}qkv_proj", "linear", q_rows + 2 * kv_rows, h, count, True, in_features_full=h),
        WeightTensor(f"{attn_prefix}o_proj", "linear", h, q_rows, count, True,
                     in_features_full=cfg.num_attention_heads * hd),
        WeightTensor("mlp.gate_up_proj" if gated else "mlp.up_proj", "linear", 2 * inter if gated else inter, h,
                     count, True, in_features_full=h),
        WeightTensor("mlp.down_proj", "linear", h, inter, count, True, in_features_full=cfg.intermediate_size),
    ]


def rope_cache_per_base(tensors: list[WeightTensor], bases: Iterable[float]) -> list[WeightTensor]:
    """``tensors`` with the shared ``rotary_emb.cos_sin_cache`` moved to the end and counted once
    per distinct non-zero RoPE base in ``bases`` (get_rope caches one instance per base; a base
    of 0 means NoPE), or dropped when every base is 0."""
    cache = "rotary_emb.cos_sin_cache"
    rope = [t for t in tensors if t.name == cache]
    out = [t for t in tensors if t.name != cache]
    distinct = set(bases) - {0.0}
    if rope and distinct:
        r = rope[0]
        out.append(WeightTensor(r.name, r.kind, r.rows, r.cols, len(distinct), r.quantizable, r.dtype))
    return out


def kv_spec_fields(ctx: GraphContext, *, num_kv_heads: int, head_size: int) -> dict[str, Any]:
    """The keyword arguments every attention KV spec (full, sliding, chunked, cross) of a layer
    takes: the block size, the per-rank KV heads and head size, the cache dtype as vLLM names it
    (the model dtype for ``--kv-cache-dtype auto``) and its bytes per element
    (vllm/model_executor/layers/attention/attention.py::Attention.get_kv_cache_spec, 0.33.0)."""
    return dict(block_size=ctx.block_size, num_kv_heads=num_kv_heads, head_size=head_size,
                cache_dtype=ctx.model_dtype if ctx.cache_dtype == "auto" else ctx.cache_dtype,
                dtype_bytes=kv_dtype_bytes(ctx.cache_dtype, dtype_bytes(ctx.model_dtype)))
