"""MiniMax M3 (``MiniMaxM3SparseForCausalLM``): GQA with per-head Gemma norms, a subset of
layers with a block-sparse "index" branch (fused index q/k projection and a bf16 index-key side
cache), leading dense SwiGLU-OAI layers and sigmoid-routed MoE with a shared expert.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.core.kv_specs import MLAAttentionSpec
from vmemplan.models.base import register
from vmemplan.models.deepseek import moe_expert_tensors, shared_expert_tensors
from vmemplan.models.windowed import _attention_spec, _check_heads, _int, _kv_heads, _WindowedBase

__all__ = ["MiniMaxM3"]


@register
class MiniMaxM3(_WindowedBase):
    """vllm/models/minimax_m3/nvidia/model.py::MiniMaxM3SparseForCausalLM (0.33.0), the text
    backbone (``hf_text_config``; the VL checkpoint nests it under ``text_config``).

    Every layer: ``qkv_proj``, RowParallel ``o_proj``, Gemma-style ``q_norm``/``k_norm``
    ``[head_dim]``, four fp32 attention scales, two layer norms.  A sparse layer
    (``sparse_attention_config.sparse_attention_freq[i] != 0``, ``MiniMaxM3SparseAttention``)
    fuses the index projections into ``qkv_proj`` (``MinimaxM3QKVParallelLinearWithIndexer``:
    per rank ``q | k | v | index_q`` sharded like the KV heads ``| index_k`` replicated), adds
    ``index_q_norm``/``index_k_norm`` ``[sparse_index_dim]`` and owns a side cache
    ``…self_attn.attn.index_cache`` (``MLAAttentionSpec``: one ``sparse_index_dim`` head in
    bf16, role indexer) next to its GQA cache.  One rotary cache ``[max_position_embeddings,
    head_dim × partial_rotary_factor]``.  Both sparse backends take 128-token pages only
    (``get_supported_kernel_block_sizes``), so the KV block size is 128.

    MLP: ``moe_layer_freq[i] == 0`` layers are dense (``dense_intermediate_size``); the others
    ``MiniMaxM3MoE``: fp32 ``GateLinear`` ``[experts, h]``, an fp32 ``e_score_correction_bias``
    with ``use_routing_bias``, shared experts of ``intermediate_size × n_shared_experts`` and
    the routed experts of ``intermediate_size``.  The model keeps a top-k buffer
    ``[max_num_batched_tokens rounded up to 4, max(1, index heads / tp), sparse_topk_blocks]``
    int32.  Embedding, final norm and an untied ``lm_head``.
    """

    architectures = ("MiniMaxM3SparseForCausalLM",)
    modules_on_every_stage = False

    def _sparse_cfg(self) -> Mapping[str, Any] | None:
        sc = self.config.text.get("sparse_attention_config")
        return sc if isinstance(sc, Mapping) and sc else None

    def _sparse(self, index: int) -> bool:
        sc = self._sparse_cfg()
        freq = sc.get("sparse_attention_freq") if sc else None
        return isinstance(freq, list) and index < len(freq) and freq[index] != 0

    def _sparse_layers(self) -> int:
        """How many layers of the model run block-sparse attention."""
        return sum(1 for i in range(self.config.num_hidden_layers) if self._sparse(i))

    def _moe(self, index: int) -> bool:
        freq = self.config.text.get("moe_layer_freq")
        if not isinstance(freq, list):
            return True
        return index < len(freq) and freq[index] != 0

    def _rotary_dim(self) -> int:
        frac = self.config.text.get("partial_rotary_factor", 1.0)
        frac = float(frac) if isinstance(frac, (int, float)) and not isinstance(frac, bool) else 1.0
        return int(self.config.head_dim * frac)

    def validate_parallel(self, ctx: GraphContext) -> None:
        cfg = self.config
        _check_heads(cfg.num_attention_heads, cfg.num_key_value_heads, ctx.tensor_parallel_size)
        sc = self._sparse_cfg()
        if sc and self._sparse_layers():
            if _int(sc, "sparse_num_index_heads", cfg.num_key_value_heads) != cfg.num_key_value_heads:
                raise UsageError("MiniMax M3's fused index projection needs sparse_num_index_heads == "
                                 "num_key_value_heads", hint="vLLM asserts it")

    def resolve_block_size(self, ctx: GraphContext, *, user_block_size: int | None, default: int) -> int:
        if self._sparse_layers():
            page = 128  # MiniMaxM3SparseBackend / MiniMaxM3IndexerBackend kernel pages
            if user_block_size is not None and user_block_size != page:
                raise UsageError(f"MiniMax M3's sparse attention runs 128-token pages, not --block-size "
                                 f"{user_block_size}", hint="drop --block-size or use 128")
            return page
        return super().resolve_block_size(ctx, user_block_size=user_block_size, default=default)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg, text = self.config, self.config.text
        span = self.rank_span(ctx)
        tp, h, hd = span.tp, span.hidden, cfg.head_dim
        start, end, n = span.start, span.end, span.layers
        first, last, rows = span.first, span.last, span.vocab_rows
        q_local = cfg.num_attention_heads // tp * hd
        kv_heads_local = _kv_heads(cfg.num_key_value_heads, tp)
        kv_local = kv_heads_local * hd
        out: list[WeightTensor] = []
        if first:
            out.append(WeightTensor("model.embed_tokens", "embedding", rows, h))
        sparse = sum(1 for i in range(start, end) if self._sparse(i))
        dense_attn = n - sparse
        if dense_attn:
            out.append(WeightTensor("self_attn.qkv_proj", "linear", q_local + 2 * kv_local, h, dense_attn, True,
                                    in_features_full=h))
        sc = self._sparse_cfg()
        if sparse and sc:
            d = _int(sc, "sparse_index_dim", hd)
            out += [
                WeightTensor("self_attn.qkv_proj[+index_q,index_k]", "linear",
                             q_local + 2 * kv_local + kv_heads_local * d + d, h, sparse, True, in_features_full=h),
                WeightTensor("self_attn.index_q_norm+index_k_norm", "norm", d, 1, 2 * sparse),
            ]
        if n:
            out += [
                WeightTensor("self_attn.o_proj", "linear", h, q_local, n, True,
                             in_features_full=cfg.num_attention_heads * hd),
                WeightTensor("self_attn.q_norm+k_norm", "norm", hd, 1, 2 * n),
                attention_scales("self_attn", n),
                WeightTensor("input_layernorm+post_attention_layernorm", "norm", h, 1, 2 * n),
                WeightTensor("rotary_emb.cos_sin_cache", "buffer", cfg.max_position_embeddings, self._rotary_dim()),
            ]
            moe = sum(1 for i in range(start, end) if self._moe(i))
            dense = n - moe
            if dense:
                out += self._mlp_tensors(ctx, name="mlp", intermediate=_int(text, "dense_intermediate_size"),
                                         count=dense)
            if moe:
                experts = _int(text, "num_local_experts")
                inter = cfg.intermediate_size
                out.append(WeightTensor("block_sparse_moe.gate", "router", experts, h, moe, dtype="float32"))
                if text.get("use_routing_bias"):
                    out.append(WeightTensor("block_sparse_moe.e_score_correction_bias", "router", experts, 1, moe,
                                            dtype="float32"))
                out += shared_expert_tensors("block_sparse_moe.shared_experts",
                                             shared=int(text.get("n_shared_experts") or 0), moe_inter=inter,
                                             hidden=h, num_layers=moe, ctx=ctx)
                out += moe_expert_tensors("block_sparse_moe.experts", num_experts=experts, hidden=h, inter=inter,
                                          num_layers=moe, ctx=ctx)
        if sc is not None and first:
            # MiniMaxM3Model.topk_indices_buffer (built with the embedding's stage)
            tokens = (ctx.max_num_batched_tokens + 3) // 4 * 4
            heads = max(1, _int(sc, "sparse_num_index_heads", cfg.num_key_value_heads) // tp)
            out.append(WeightTensor("model.topk_indices_buffer", "buffer", tokens, heads * _int(sc, "sparse_topk_blocks"),
                                    dtype="int32"))
        if last:
            out += [WeightTensor("model.norm", "norm", h, 1), WeightTensor("lm_head", "lm_head", rows, h)]
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        cfg = self.config
        heads = _kv_heads(cfg.num_key_value_heads, ctx.tensor_parallel_size)
        start, end = self.layer_range(ctx)
        sc = self._sparse_cfg()
        specs: dict[str, Any] = {}
        for i in range(start, end):
            specs[f"model.layers.{i}.self_attn.attn"] = _attention_spec(ctx, num_kv_heads=heads,
                                                                        head_size=cfg.head_dim)
            if self._sparse(i) and sc:
                # MiniMaxM3IndexerCache.get_kv_cache_spec: bf16 index keys (indexer_kv_dtype "bf16")
                specs[f"model.layers.{i}.self_attn.attn.index_cache"] = MLAAttentionSpec(
                    block_size=ctx.block_size, head_size=_int(sc, "sparse_index_dim", cfg.head_dim),
                    cache_dtype="bfloat16", dtype_bytes=2, cache_role="indexer")
        return specs

    def notes(self) -> tuple[str, ...]:
        return (f"{self._sparse_layers()} of {self.config.num_hidden_layers} layers run block-sparse attention "
                "with a bf16 index-key side cache; KV pages are 128 tokens",)
