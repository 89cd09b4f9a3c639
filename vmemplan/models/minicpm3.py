"""MiniCPM3 (``MiniCPM3ForCausalLM``): DeepSeek-V2's low-rank projections feeding ordinary
multi-head attention.

Mirrors vllm/model_executor/models/minicpm3.py (0.33.0): MiniCPM3Attention holds a
replicated ``q_a_proj`` (hidden -> q_lora_rank), ``q_a_layernorm``, a column-parallel
``q_b_proj`` (q_lora_rank -> heads × (qk_nope + qk_rope)), a replicated
``kv_a_proj_with_mqa`` (hidden -> kv_lora_rank + qk_rope), ``kv_a_layernorm``, a
column-parallel ``kv_b_proj`` (kv_lora_rank -> heads × (qk_nope + v)) and a row-parallel
``o_proj``; the latent is expanded in the forward, so the cache is a plain
``Attention(heads/tp, qk_nope + qk_rope, num_kv_heads=heads/tp)`` with V padded to the QK
head size.  The rest is MiniCPM's (minicpm.py: MiniCPMDecoderLayer, MiniCPMMLP, the head
tied to the embedding unless the config says otherwise).  The rotary cache covers
``qk_rope_head_dim`` (LongRoPE: the short and the long cache, concatenated).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.core.kv_specs import FullAttentionSpec, kv_dtype_bytes
from vmemplan.core.units import dtype_bytes
from vmemplan.models.base import register, rope_cache_positions
from vmemplan.models.dense import LlamaLike
from vmemplan.models.moe_blocks import gated_mlp_tensors, stage_embedding, stage_head

__all__ = ["MiniCPM3"]


@register
class MiniCPM3(LlamaLike):
    """MiniCPM3: MLA-shaped projections, a full-attention cache of ``heads/tp`` heads of
    ``qk_nope_head_dim + qk_rope_head_dim``."""

    architectures = ("MiniCPM3ForCausalLM",)

    #: transformers/models/minicpm3/configuration_minicpm3.py::MiniCPM3Config defaults (5.20);
    #: ``v_head_dim`` defaults to hidden_size / num_attention_heads
    _DEFAULTS = {"kv_lora_rank": 256, "q_lora_rank": 768, "qk_nope_head_dim": 64, "qk_rope_head_dim": 32}

    def _t(self, key: str) -> int:
        value = self.config.text.get(key, self._DEFAULTS.get(key))
        if value is None and key == "v_head_dim":
            value = self.config.hidden_size // self.config.num_attention_heads
        if value is None:
            raise UsageError(f"config.json lacks {key!r}, which the MiniCPM3 graph needs")
        return int(value)

    @property
    def qk_head_dim(self) -> int:
        return self._t("qk_nope_head_dim") + self._t("qk_rope_head_dim")

    def head_tied(self) -> bool:
        # MiniCPMForCausalLM ties when config.tie_word_embeddings (MiniCPM3's config class
        # defaults it to true; the released config leaves it out)
        return bool(self.config.text.get("tie_word_embeddings", True))

    def kv_heads_per_rank(self, tp: int) -> int:
        return self.config.num_attention_heads // tp

    def validate_parallel(self, ctx: GraphContext) -> None:
        tp = ctx.tensor_parallel_size
        heads = self.config.num_attention_heads
        if heads % tp:  # MiniCPM3Attention asserts num_heads % tp_size == 0
            raise UsageError(f"--tensor-parallel-size {tp} does not divide the {heads} attention heads",
                             hint=f"use a divisor of {heads}")

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        if cfg.text.get("num_experts"):
            raise UsageError("MiniCPM3 with MoE layers (num_experts) is not modelled",
                             hint="the released MiniCPM3 checkpoints are dense")
        span = self.rank_span(ctx)
        tp, h, n = span.tp, span.hidden, span.layers
        heads = cfg.num_attention_heads
        hl = heads // tp
        q_lora, kv_lora = self._t("q_lora_rank"), self._t("kv_lora_rank")
        nope, rope, v = self._t("qk_nope_head_dim"), self._t("qk_rope_head_dim"), self._t("v_head_dim")
        out = stage_embedding(span)
        if n:
            out += [
                WeightTensor("self_attn.q_a_proj", "linear", q_lora, h, n, True, in_features_full=h),
                WeightTensor("self_attn.q_a_layernorm", "norm", q_lora, 1, n),
                WeightTensor("self_attn.q_b_proj", "linear", hl * (nope + rope), q_lora, n, True,
                             in_features_full=q_lora),
                WeightTensor("self_attn.kv_a_proj_with_mqa", "linear", kv_lora + rope, h, n, True,
                             in_features_full=h),
                WeightTensor("self_attn.kv_a_layernorm", "norm", kv_lora, 1, n),
                WeightTensor("self_attn.kv_b_proj", "linear", hl * (nope + v), kv_lora, n, True,
                             in_features_full=kv_lora),
                WeightTensor("self_attn.o_proj", "linear", h, hl * v, n, True, in_features_full=heads * v),
                attention_scales("self_attn.attn", n),
                WeightTensor("input_layernorm+post_attention_layernorm", "norm", h, 1, 2 * n),
            ]
            out += gated_mlp_tensors("mlp", cfg.intermediate_size, h, n, tp)
            positions, _ = rope_cache_positions(cfg)
            out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer", positions, rope))
        return out + stage_head(span, head=not (self.head_tied() and span.first))

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """``FullAttentionSpec(num_kv_heads=heads/tp, head_size=qk_nope + qk_rope)`` per layer
        (Attention.get_kv_cache_spec; V is padded to the QK head size in the forward)."""
        heads = self.kv_heads_per_rank(ctx.tensor_parallel_size)
        nbytes = kv_dtype_bytes(ctx.cache_dtype, dtype_bytes(ctx.model_dtype))
        cache_dtype = ctx.model_dtype if ctx.cache_dtype == "auto" else ctx.cache_dtype
        spec = FullAttentionSpec(block_size=ctx.block_size, num_kv_heads=heads, head_size=self.qk_head_dim,
                                 cache_dtype=cache_dtype, dtype_bytes=nbytes)
        start, end = self.layer_range(ctx)
        return {f"model.layers.{i}.self_attn.attn": spec for i in range(start, end)}
