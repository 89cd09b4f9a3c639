"""AI2 OLMo Hybrid (``OlmoHybridForCausalLM``): OLMo-3 post-norm attention layers (q/k
norms over every head) between pre-norm gated-delta-net layers; a SwiGLU MLP in every layer.

Mirrors vllm/model_executor/models/olmo_hybrid.py (OlmoHybridAttention, OlmoHybridMLP,
OlmoHybridDecoderLayer, OlmoHybridModel, OlmoHybridForCausalLM) and
vllm/model_executor/layers/mamba/gdn/olmo_gdn_linear_attn.py::
OlmoHybridGatedDeltaNetAttention (0.33.0): Triton prefill only, so MambaBase's spec without
a prefill-checkpoint page.
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.hybrid import LayerKind, StateTensor, gdn_state, state_dtypes
from vmemplan.models.mixer_blocks import (
    RecurrentHybrid,
    embedding_tensors,
    gqa_attention_tensors,
    head_tensors,
    listed_layer_types,
    mlp_tensors,
)
from vmemplan.models.mixer_blocks import need_int as _need

__all__ = ["OlmoHybrid"]


@register
class OlmoHybrid(RecurrentHybrid):
    """OLMo Hybrid: ``layer_types`` lists "linear_attention" (gated delta net) /
    "full_attention"; every layer has a SwiGLU MLP."""

    architectures = ("OlmoHybridForCausalLM",)
    attention_layer_name = "model.layers.{i}.self_attn.attn"
    mamba_layer_name = "model.layers.{i}.linear_attn"

    def layer_kinds(self) -> tuple[LayerKind, ...]:
        types = listed_layer_types(self.config.text, self.config.num_hidden_layers,
                                   ("linear_attention", "full_attention"), "OLMo Hybrid")
        return tuple("mamba" if x == "linear_attention" else "attention" for x in types)

    @property
    def attention_head_size(self) -> int:
        # OlmoHybridAttention: head_dim = hidden_size // num_attention_heads
        return self.config.hidden_size // self.config.num_attention_heads

    def _kv_total(self) -> int:
        return int(self._get("num_key_value_heads", self.config.num_attention_heads))

    def attention_kv_heads(self, tp: int) -> int:
        return max(1, self._kv_total() // tp)

    def mamba_state(self, ctx: GraphContext) -> tuple[StateTensor, ...]:
        """Gated-delta state (OlmoHybridForCausalLM.get_mamba_state_shape_from_config /
        get_mamba_state_dtype_from_config, 0.33.0)."""
        conv, ssm = state_dtypes(ctx.model_dtype, ctx.mamba_cache_dtype, ctx.mamba_ssm_cache_dtype)
        t = self.config.text
        return gdn_state(
            tp=ctx.tensor_parallel_size, num_k_heads=_need(t, "linear_num_key_heads"),
            num_v_heads=_need(t, "linear_num_value_heads"), head_k_dim=_need(t, "linear_key_head_dim"),
            head_v_dim=_need(t, "linear_value_head_dim"), conv_kernel=_need(t, "linear_conv_kernel_dim"),
            num_spec=ctx.num_speculative_tokens, conv_dtype=conv, ssm_dtype=ssm,
        )

    def _uses_rope(self) -> bool:
        rp = self.config.text.get("rope_parameters")
        return isinstance(rp, dict) and rp.get("rope_theta") is not None

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg, t = self.config, self.config.text
        span = self.rank_span(ctx)
        tp, h, n = span.tp, span.hidden, span.layers
        hd = self.attention_head_size
        lin, vec = self.linear, self.vector
        n_attn = self.stage_kinds(span)["attention"]
        n_gdn = n - n_attn
        out = embedding_tensors(span)
        if n_attn:
            # q/k norms span every head (applied after an all-gather)
            norms = (vec("self_attn.q_norm", h, n_attn), vec("self_attn.k_norm", self._kv_total() * hd, n_attn))
            out += gqa_attention_tensors("self_attn", tp=tp, hidden=h, heads=cfg.num_attention_heads,
                                         kv_heads_local=self.attention_kv_heads(tp), head_dim=hd, count=n_attn,
                                         norms=norms)
            out.append(vec("post_attention_layernorm+post_feedforward_layernorm", h, 2 * n_attn))
            if self._uses_rope():
                out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer", cfg.max_position_embeddings, hd))
        if n_gdn:
            nk, nv = _need(t, "linear_num_key_heads"), _need(t, "linear_num_value_heads")
            hk, hv = _need(t, "linear_key_head_dim"), _need(t, "linear_value_head_dim")
            kernel = _need(t, "linear_conv_kernel_dim")
            key_dim, value_dim = nk * hk, nv * hv
            out += [
                lin("linear_attn.in_proj_qkvg", (2 * key_dim + 2 * value_dim) // tp, h, n_gdn, in_full=h),
                lin("linear_attn.b_proj+a_proj", nv // tp, h, 2 * n_gdn, in_full=h),
                # conv1d is a ColumnParallelLinear built without a quant config
                lin("linear_attn.conv1d", (2 * key_dim + value_dim) // tp, kernel, n_gdn, quantizable=False),
                # dt_bias (torch.ones) and A_log (torch.empty) take the default (model) dtype
                vec("linear_attn.dt_bias+A_log", nv // tp, 2 * n_gdn, kind="bias"),
                vec("linear_attn.o_norm", hv, n_gdn),
                lin("linear_attn.o_proj", h, value_dim // tp, n_gdn, in_full=value_dim),
                vec("input_layernorm+post_attention_layernorm", h, 2 * n_gdn),
            ]
        if n:
            out += mlp_tensors("mlp", tp=tp, hidden=h, inter=cfg.intermediate_size, count=n)
        return out + head_tensors(span, tied=cfg.tie_word_embeddings)
