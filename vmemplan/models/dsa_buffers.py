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
* the indexer's own rotary cos/sin cache, a second cache of the main one's shape, unless the config
  sets ``indexer_rope_interleave`` (then the indexer's rope is non-NeoX like the main one and
  get_rope returns the same cached instance: GLM-5); vllm/models/deepseek_v32/attention.py.

Checked against vLLM 0.33's own construction on the meta device (DeepSeek-V3.2 at TP 8, GLM-5 at
TP 1 and 8: 8,433,672 B of int32 per index-producing layer there, of which these account for
8,400,900; the other 32,772 B a layer, one ``[max_num_batched_tokens + 1]`` int32, are not
identified in vLLM's source yet and not counted).
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
    return [
        WeightTensor("model.topk_indices_buffer", "buffer", ctx.max_num_batched_tokens, topk, dtype="int32"),
        WeightTensor("index_group.physical_topk_indices", "buffer", rows + 1, topk, groups, dtype="int32"),
        WeightTensor("index_group.valid_topk_counts", "buffer", rows + 1, 1, groups, dtype="int32"),
    ] + ([] if adapter.config.text.get("indexer_rope_interleave") else
         [WeightTensor("indexer_rope_emb.cos_sin_cache", "buffer", rope.rows, rope.cols, dtype=rope.dtype)])
