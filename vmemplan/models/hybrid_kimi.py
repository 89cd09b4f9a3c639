"""Kimi-Linear: Kimi delta attention (KDA) layers with MLA full-attention layers and MoE.

Mirrors vllm/models/kimi_k3/nvidia/model.py (KimiLinearForCausalLM, the decoder layer that
picks KimiLinearGatedDeltaNetAttention when the config has no full-rank gate),
vllm/model_executor/layers/mamba/gdn/kimi_gdn_linear_attn.py and
vllm/models/kimi_k3/nvidia/mla.py (the q_lora_rank = None branch), 0.33.0.

``linear_attn_config.kda_layers`` / ``full_attn_layers`` are 1-based layer numbers.
"""

from __future__ import annotations

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.hybrid import LayerKind, StateTensor, kda_state, kda_state_dtypes
from vmemplan.models.mixer_blocks import (
    LinearMlaHybrid,
    embedding_tensors,
    fused_expert_tensors,
    head_tensors,
    kda_mixer_tensors,
    mla_attention_tensors,
    mlp_tensors,
)

__all__ = ["KimiLinear"]

#: length keys vLLM reads, in order (vllm/config/model.py::_get_and_verify_max_len)
_LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
                "model_max_length", "max_sequence_length", "max_seq_length", "seq_len")


@register
class KimiLinear(LinearMlaHybrid):
    architectures = ("KimiLinearForCausalLM",)
    attention_layer_name = "model.layers.{i}.self_attn.mla_attn"

    def _kda(self) -> dict:
        k = self.config.text.get("linear_attn_config")
        if not isinstance(k, dict):
            raise ModelConfigError("config.json lacks 'linear_attn_config' (Kimi-Linear)")
        for key in ("num_heads", "head_dim", "short_conv_kernel_size", "kda_layers"):
            if key not in k:
                raise ModelConfigError(f"linear_attn_config lacks {key!r}")
        return k

    def layer_kinds(self) -> tuple[LayerKind, ...]:
        kda = {int(x) for x in self._kda()["kda_layers"]}
        return tuple("mamba" if (i + 1) in kda else "mla" for i in range(self.config.num_hidden_layers))

    @property
    def mla_head_size(self) -> int:
        """``kv_lora_rank + qk_rope_head_dim`` (one latent per token, MultiHeadLatentAttention)."""
        return int(self._get("kv_lora_rank")) + int(self._get("qk_rope_head_dim"))

    def mamba_state(self, ctx: GraphContext) -> tuple[StateTensor, ...]:
        """KDA state per rank (KimiLinearGatedDeltaNetAttention.get_state_shape /
        get_state_dtype → kda_state_shape / kda_state_dtype, 0.33.0)."""
        k = self._kda()
        conv, rec = kda_state_dtypes(ctx.model_dtype, ctx.mamba_cache_dtype, ctx.mamba_ssm_cache_dtype)
        return kda_state(tp=ctx.tensor_parallel_size, num_heads=int(k["num_heads"]), head_dim=int(k["head_dim"]),
                         conv_kernel=int(k["short_conv_kernel_size"]), num_spec=ctx.num_speculative_tokens,
                         conv_dtype=conv, rec_dtype=rec)

    def validate_parallel(self, ctx: GraphContext) -> None:
        self.check_heads(ctx)
        self.mamba_state(ctx)

    def derived_max_model_len(self) -> int:
        for key in _LENGTH_KEYS:
            v = self.config.text.get(key)
            if isinstance(v, int) and v > 0:
                return v
        return self.config.max_position_embeddings

    def is_moe_layer(self, i: int) -> bool:
        e = self._get("num_experts")
        return bool(e) and i >= self._get("first_k_dense_replace", 0) and i % (self._get("moe_layer_freq", 1) or 1) == 0

    @property
    def intermediate_size(self) -> int:
        return int(self._get("moe_intermediate_size")) * int(self._get("num_experts_per_token", 1))

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        span = self.rank_span(ctx)
        tp, h = span.tp, span.hidden
        out = embedding_tensors(span)
        n_kda = self.stage_kinds(span)["mamba"]
        n_mla = span.layers - n_kda
        if n_kda:
            k = self._kda()
            out += kda_mixer_tensors("self_attn", tp=tp, hidden=h, num_heads=int(k["num_heads"]),
                                     head_dim=int(k["head_dim"]), conv_kernel=int(k["short_conv_kernel_size"]),
                                     count=n_kda)
        if n_mla:
            nope, rope, v = int(self._get("qk_nope_head_dim")), int(self._get("qk_rope_head_dim")), int(self._get("v_head_dim"))
            lora = int(self._get("kv_lora_rank"))
            if self._get("q_lora_rank"):
                raise ModelConfigError("Kimi-Linear with q_lora_rank is not modelled (no released config has one)")
            out += mla_attention_tensors("self_attn", tp=tp, hidden=h, heads=cfg.num_attention_heads, nope=nope,
                                         rope=rope, v=v, kv_lora=lora, q_lora=None, count=n_mla)
            # beside the four Attention scales, three fp32 [1] buffers a layer: ``_one_scale``
            # (MultiHeadLatentAttention.__init__) and ``_q_scale_inv`` / ``_k_scale_inv``, the
            # reciprocals its process_weights_after_loading registers (kimi_k3/nvidia/mla.py, 0.33.0)
            out.append(WeightTensor("self_attn._one_scale+_q_scale_inv+_k_scale_inv", "buffer", 3, 1, n_mla,
                                    dtype="float32"))
        n_moe = sum(1 for i in range(span.start, span.end) if self.is_moe_layer(i))
        if n_moe:
            e = int(self._get("num_experts"))
            inter = int(self._get("moe_intermediate_size"))
            out += [
                WeightTensor("block_sparse_moe.gate", "router", e, h, n_moe),
                WeightTensor("block_sparse_moe.gate.e_score_correction_bias", "router", e, 1, n_moe, dtype="float32"),
                *fused_expert_tensors("block_sparse_moe.experts", num_experts=e, inter=inter, hidden=h, count=n_moe,
                                      ctx=ctx),
            ]
            shared = inter * int(self._get("num_shared_experts", 0) or 0)
            if shared:
                out += mlp_tensors("block_sparse_moe.shared_experts", tp=tp, hidden=h, inter=shared, count=n_moe)
        n_dense = span.layers - n_moe
        if n_dense:
            out += mlp_tensors("mlp", tp=tp, hidden=h, inter=cfg.intermediate_size, count=n_dense)
        if span.layers:
            out.append(self.vector("input_layernorm+post_attention_layernorm", h, 2 * span.layers))
        return out + head_tensors(span, tied=cfg.tie_word_embeddings)
