"""The device tensors DeepSeek-V3.2's sparse attention (DSA) allocates with the model, beside its
parameters (DeepSeek-V3.2, GLM-5 / GLM-5.2):

* the shared top-k index buffer ``[max_num_batched_tokens, index_topk]`` int32 the indexers
  write and the sparse MLA backend reads (vllm/models/deepseek_v32/nvidia/model.py::
  DeepseekV32Model.__init__, 0.33.0);
* per index-producing layer, the group a ``SparseMLAIndexGroupBuilder`` opens: a physical top-k
  table ``[rows + 1, index_topk]`` int32 and ``valid_topk_counts`` ``[rows + 1]`` int32, with
  ``rows = min(max_num_batched_tokens, max_num_seqs × (1 + speculative tokens))``
  (vllm/v1/attention/backends/mla/index_group.py::SparseMLAIndexGroupBuilder.register_layer,
  get_sparse_mla_index_group_max_rows);
* on FLASH_ATTN_MLA_SPARSE (Hopper, 16-bit cache), per sparse MLA layer the impl's
  ``cu_seqlens_q_buffer``, an int32 ``arange(max_num_batched_tokens + 1)`` (the top-k buffer's
  rows + 1; vllm/v1/attention/backends/mla/flashattn_mla_sparse.py::FlashAttnMLASparseImpl.
  __init__); the other sparse backends allocate nothing per layer at construction;
* the indexer's own rotary cos/sin cache, a second cache of the main one's shape, unless the config
  sets ``indexer_rope_interleave`` (then the indexer's rope is non-NeoX like the main one and
  get_rope returns the same cached instance: GLM-5); vllm/models/deepseek_v32/attention.py.

Checked against vLLM 0.33's own construction on the meta device (DeepSeek-V3.2 at TP 1 and 8,
GLM-5 at TP 1 and 8: 8,433,672 B of int32 per layer at 8,192 batched tokens, of which the
cu_seqlens_q_buffer is 32,772 B).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor

__all__ = ["dsa_index_buffers"]


def dsa_index_buffers(adapter: Any, ctx: GraphContext, layers: range, rope: WeightTensor) -> list[WeightTensor]:
    """The DSA buffers of one rank holding ``layers`` (those with an indexer open a group)."""
    topk = int(adapter.config.text.get("index_topk") or 0)
    if not topk or not len(layers):
        return []
    rows = min(ctx.max_num_batched_tokens, ctx.max_num_seqs * (1 + ctx.num_speculative_tokens))
    groups = sum(1 for i in layers if adapter.has_indexer(i))
    # every DeepseekV32 layer is a sparse MLA layer, index-producing or not
    cu_seqlens = ([WeightTensor("self_attn.impl.cu_seqlens_q_buffer", "buffer", ctx.max_num_batched_tokens + 1, 1,
                                len(layers), dtype="int32")]
                  if adapter.backend(ctx).name == "FLASH_ATTN_MLA_SPARSE" else [])
    return cu_seqlens + [
        WeightTensor("model.topk_indices_buffer", "buffer", ctx.max_num_batched_tokens, topk, dtype="int32"),
        WeightTensor("index_group.physical_topk_indices", "buffer", rows + 1, topk, groups, dtype="int32"),
        WeightTensor("index_group.valid_topk_counts", "buffer", rows + 1, 1, groups, dtype="int32"),
    ] + ([] if adapter.config.text.get("indexer_rope_interleave") else
         [WeightTensor("indexer_rope_emb.cos_sin_cache", "buffer", rope.rows, rope.cols, dtype=rope.dtype)])
