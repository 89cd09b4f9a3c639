"""K2 Horizon (``K2HorizonForCausalLM``, MBZUAI IFM): a GQA decoder with grouped RMSNorms, an
optional sigmoid output gate, and on its sparse layers MoE MLPs and "MoVA" attention (routed
value projections).

Mirrors vllm/model_executor/models/k2_horizon.py (0.33.0):

* K2HorizonDecoderLayer: a layer is sparse when it is not in ``mlp_only_layers``,
  ``num_experts`` > 0 and ``(index + 1) % decoder_sparse_step == 0``.  Sparse layers take
  K2HorizonMoVAAttention when ``mova_num_experts`` > 0 and K2HorizonSparseMoeBlock; the others
  K2HorizonAttention and K2HorizonMLP (``intermediate_size``).
* K2HorizonAttention: a QKVParallelLinear ``qkv_proj`` and a RowParallelLinear ``o_proj`` (both
  biased under ``attention_bias``).  K2HorizonMoVAAttention: a merged column-parallel ``qk_proj``
  (queries and keys only, biased under ``attention_bias``), a replicated ``v_router``
  ``[mova_num_experts, hidden]`` with an fp32 bias under ``moe_gate_bias``, ``mova_num_experts``
  column-parallel ``v_experts`` of ``kv_heads × head_dim`` outputs (each rank ``max(1, kv/tp)``
  heads) and ``o_proj``.  Both: ``q_norm`` / ``k_norm`` K2HorizonRMSNorms of the per-rank query and
  key widths under ``query_key_norm``, a column-parallel ``gate_proj`` ``[heads × head_dim,
  hidden]`` when ``attention_gate_func`` is set, the four fp32 scales of an ordinary Attention and
  one shared rotary table ``[max_position_embeddings, rope_head_dim]`` (``rope_dim`` under the
  weight-fold path, ``get_rope(rope_head_dim)`` otherwise: the same rows and columns).
* K2HorizonSparseMoeBlock: a GateLinear router in the model dtype with an fp32 bias under
  ``moe_gate_bias``, a TP-split shared expert of ``moe_intermediate_size × num_shared_experts``
  when that is > 0, and fused experts.
* K2HorizonModel: ``embed_tokens`` and ``norm`` (K2HorizonRMSNorm: one ``[hidden]`` weight) on
  every stage; an lm_head sharing the embedding under ``tie_word_embeddings``.

Every layer has an ordinary full-attention cache of ``max(1, kv/tp)`` heads of ``head_dim``.
"""

from __future__ import annotations

import dataclasses

from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.models.base import register, rope_cache_positions
from vmemplan.models.dense import LlamaLike
from vmemplan.models.moe_blocks import gated_mlp_tensors, moe_experts, router_tensors, stage_embedding, stage_head

__all__ = ["K2Horizon"]


@register
class K2Horizon(LlamaLike):
    """K2 Horizon's dense and sparse (MoE + MoVA) layers."""

    architectures = ("K2HorizonForCausalLM",)
    family = "moe"

    def is_sparse_layer(self, index: int) -> bool:
        text = self.config.text
        only = text.get("mlp_only_layers") or []
        step = int(text.get("decoder_sparse_step") or 1)
        return index not in only and int(text.get("num_experts") or 0) > 0 and (index + 1) % step == 0

    def sliding_window_for_layer(self, index: int) -> int | None:
        return None  # K2HorizonAttention builds Attention without a window

    @property
    def head_dim(self) -> int:
        text = self.config.text
        return int(text.get("head_dim") or self.config.hidden_size // self.config.num_attention_heads)

    def _attention(self, n: int, mova: bool, ctx: GraphContext) -> list[WeightTensor]:
        text = self.config.text
        tp = ctx.tensor_parallel_size
        h = self.config.hidden_size
        hd = self.head_dim
        heads = self.config.num_attention_heads
        q = heads // tp * hd
        kv = self.kv_heads_per_rank(tp) * hd
        bias = bool(text.get("attention_bias"))
        out: list[WeightTensor] = []
        if mova:
            experts = int(text["mova_num_experts"])
            out += [
                WeightTensor("self_attn.qk_proj", "linear", q + kv, h, n, True, in_features_full=h),
                WeightTensor("self_attn.v_router", "router", experts, h, n),
                WeightTensor("self_attn.v_experts", "linear", kv, h, n * experts, True, in_features_full=h),
            ]
            if bias:
                out.append(WeightTensor("self_attn.qk_proj.bias", "bias", q + kv, 1, n))
            if text.get("moe_gate_bias"):
                out.append(WeightTensor("self_attn.v_router.bias", "router", experts, 1, n, dtype="float32"))
        else:
            out.append(WeightTensor("self_attn.qkv_proj", "linear", q + 2 * kv, h, n, True, in_features_full=h))
            if bias:
                out.append(WeightTensor("self_attn.qkv_proj.bias", "bias", q + 2 * kv, 1, n))
        out.append(WeightTensor("self_attn.o_proj", "linear", h, q, n, True, in_features_full=heads * hd))
        if bias:
            out.append(WeightTensor("self_attn.o_proj.bias", "bias", h, 1, n))
        if text.get("query_key_norm"):
            out += [WeightTensor("self_attn.q_norm", "norm", q, 1, n), WeightTensor("self_attn.k_norm", "norm", kv, 1, n)]
        if text.get("attention_gate_func") is not None:
            out.append(WeightTensor("self_attn.gate_proj", "linear", q, h, n, True, in_features_full=h))
        out.append(attention_scales("self_attn.attn", n))
        return out

    def _moe(self, n: int, ctx: GraphContext) -> list[WeightTensor]:
        text = self.config.text
        h = self.config.hidden_size
        experts = int(text["num_experts"])
        inter = int(text["moe_intermediate_size"])
        out = router_tensors("mlp.gate", experts, h, n, bias="mlp.gate.bias" if text.get("moe_gate_bias") else None)
        return out + moe_experts(shared=int(text.get("num_shared_experts") or 0), shared_inter=inter, experts=experts,
                                 inter=inter, hidden=h, num_layers=n, ctx=ctx)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        text = cfg.text
        # K2HorizonModel: embed_tokens and norm on every stage
        span = dataclasses.replace(self.rank_span(ctx), first=True, last=True)
        h, n = span.hidden, span.layers
        sparse = sum(1 for i in range(span.start, span.end) if self.is_sparse_layer(i))
        mova = sparse if int(text.get("mova_num_experts") or 0) > 0 else 0
        out = stage_embedding(span)
        out += self._attention(n - mova, False, ctx) if n - mova else []
        out += self._attention(mova, True, ctx) if mova else []
        out += gated_mlp_tensors("mlp", cfg.intermediate_size, h, n - sparse, span.tp)
        if sparse:
            out += self._moe(sparse, ctx)
        if n:
            out.append(WeightTensor("input_layernorm+post_attention_layernorm", "norm", h, 1, 2 * n))
            rope = int(text.get("rope_head_dim") or self.head_dim)
            out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer", rope_cache_positions(cfg)[0], rope))
        return out + stage_head(span, head=not cfg.tie_word_embeddings)
