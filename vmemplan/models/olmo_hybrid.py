"""AI2 OLMo Hybrid (``OlmoHybridForCausalLM``): OLMo-3 post-norm attention layers (q/k
norms over every head) between pre-norm gated-delta-net layers; a SwiGLU MLP in every layer.

Mirrors vllm/model_executor/models/olmo_hybrid.py (OlmoHybridAttention, OlmoHybridMLP,
OlmoHybridDecoderLayer, OlmoHybridModel, OlmoHybridForCausalLM) and
vllm/model_executor/layers/mamba/gdn/olmo_gdn_linear_attn.py::
OlmoHybridGatedDeltaNetAttention (0.33.0): Triton prefill only, so MambaBase's spec without
a prefill-checkpoint page.
"""

from __future__ import annotations

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.models.base import register
from vmemplan.models.dense import pad_vocab
from vmemplan.models.hybrid import HybridAdapter, LayerKind, StateTensor, gdn_state, state_dtypes

__all__ = ["OlmoHybrid"]


def _need(text, key: str) -> int:
    value = text.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ModelConfigError(f"config.json lacks {key!r}")
    return value


@register
class OlmoHybrid(HybridAdapter):
    """OLMo Hybrid: ``layer_types`` lists "linear_attention" (gated delta net) /
    "full_attention"; every layer has a SwiGLU MLP."""

    architectures = ("OlmoHybridForCausalLM",)
    attention_layer_name = "model.layers.{i}.self_attn.attn"
    mamba_layer_name = "model.layers.{i}.linear_attn"

    def _get(self, key: str, default=None):
        v = self.config.text.get(key, default)
        return default if v is None else v

    def layer_kinds(self) -> tuple[LayerKind, ...]:
        types = self.config.text.get("layer_types")
        n = self.config.num_hidden_layers
        if not isinstance(types, list) or len(types) != n:
            raise ModelConfigError("config.json lacks 'layer_types' with one entry per layer (OLMo Hybrid)")
        bad = sorted({str(x) for x in types} - {"linear_attention", "full_attention"})
        if bad:
            raise ModelConfigError(f"layer_types has unknown kinds {bad}")
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

    def validate_parallel(self, ctx: GraphContext) -> None:
        super().validate_parallel(ctx)
        self.mamba_state(ctx)

    def derived_max_model_len(self) -> int:
        return self.config.max_position_embeddings

    def _uses_rope(self) -> bool:
        rp = self.config.text.get("rope_parameters")
        return isinstance(rp, dict) and rp.get("rope_theta") is not None

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        t = cfg.text
        tp = ctx.tensor_parallel_size
        h = cfg.hidden_size
        hd = self.attention_head_size
        kinds = self.layer_kinds()
        start, end = self.layer_range(ctx)
        rng = range(start, end)
        first = ctx.pipeline_rank == 0
        last = ctx.pipeline_rank == ctx.pipeline_parallel_size - 1
        lin, vec = self.linear, self.vector
        vocab_rows = pad_vocab(cfg.vocab_size) // tp
        n = len(rng)
        n_attn = sum(1 for i in rng if kinds[i] == "attention")
        n_gdn = n - n_attn
        out: list[WeightTensor] = []
        if first:
            out.append(WeightTensor("model.embed_tokens", "embedding", vocab_rows, h))
        if n_attn:
            q_rows = cfg.num_attention_heads // tp * hd
            kv_rows = self.attention_kv_heads(tp) * hd
            out += [
                lin("self_attn.qkv_proj", q_rows + 2 * kv_rows, h, n_attn, in_full=h),
                lin("self_attn.o_proj", h, q_rows, n_attn, in_full=cfg.num_attention_heads * hd),
                # q/k norms span every head (applied after an all-gather)
                vec("self_attn.q_norm", h, n_attn),
                vec("self_attn.k_norm", self._kv_total() * hd, n_attn),
                attention_scales("self_attn.attn", n_attn),
                vec("post_attention_layernorm+post_feedforward_layernorm", h, 2 * n_attn),
            ]
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
            inter = cfg.intermediate_size
            out += [
                lin("mlp.gate_up_proj", 2 * inter // tp, h, n, in_full=h),
                lin("mlp.down_proj", h, inter // tp, n, in_full=inter),
            ]
        if last:
            out.append(vec("model.norm", h, 1))
            if not (cfg.tie_word_embeddings and first):
                out.append(WeightTensor("lm_head", "lm_head", vocab_rows, h))
        return out
