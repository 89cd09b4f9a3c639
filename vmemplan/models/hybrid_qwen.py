"""Gated-DeltaNet hybrids: Qwen3-Next and Qwen3.5 / Qwen3.6 (dense and MoE).

Mirrors vllm/model_executor/models/qwen3_next.py (Qwen3NextAttention, Qwen3NextDecoderLayer,
Qwen3NextSparseMoeBlock, Qwen3NextMLP), vllm/model_executor/models/qwen3_5.py
(Qwen3_5DecoderLayer) and vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py
(QwenGatedDeltaNetAttention), 0.33.0.

Layout: ``layer_types`` lists "linear_attention" (a gated-delta mixer with recurrent state)
or "full_attention"; when absent, transformers' Qwen3NextConfig makes every
``full_attention_interval``-th layer (default 4) full attention
(transformers/models/qwen3_next/configuration_qwen3_next.py, 4.57.1).
"""

from __future__ import annotations

from vmemplan.core.errors import ModelConfigError, UsageError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.models.base import register
from vmemplan.models.dense import pad_vocab
from vmemplan.models.hybrid import (
    HybridAdapter,
    LayerKind,
    StateTensor,
    experts_per_rank,
    gdn_state,
    state_dtypes,
)

__all__ = ["Qwen3Next", "Qwen3_5", "gdn_layer_types"]

#: FLASHINFER_GDN_CHECKPOINT_ALIGNMENT, vllm/v1/attention/backends/gdn_attn.py (0.33.0)
GDN_CHECKPOINT_ALIGNMENT = 64


def gdn_layer_types(text: dict | object, num_layers: int) -> tuple[str, ...]:
    """``layer_types`` as the config states it, else every ``full_attention_interval``-th layer
    full attention (transformers Qwen3NextConfig.__init__, 4.57.1)."""
    get = text.get if hasattr(text, "get") else (lambda k, d=None: d)  # type: ignore[union-attr]
    types = get("layer_types")
    if isinstance(types, list) and len(types) == num_layers:
        return tuple(str(t) for t in types)
    interval = get("full_attention_interval") or 4
    return tuple("linear_attention" if (i + 1) % interval else "full_attention" for i in range(num_layers))


class _GatedDeltaHybrid(HybridAdapter):
    """Shared body of Qwen3-Next and Qwen3.5."""

    attention_layer_name = "model.layers.{i}.self_attn.attn"
    mamba_layer_name = "model.layers.{i}.linear_attn"
    #: Qwen3-Next stores in_proj_qkvz / in_proj_ba as one interleaved shard each
    gqa_interleaved_layout = True

    # -- config facts ---------------------------------------------------------------------
    def _t(self, key: str, default=None):
        value = self.config.text.get(key, default)
        return default if value is None else value

    def _need(self, key: str) -> int:
        value = self.config.text.get(key)
        if not isinstance(value, int) or value <= 0:
            raise ModelConfigError(f"config.json lacks {key!r} (needed for the gated-delta layers)")
        return value

    def layer_kinds(self) -> tuple[LayerKind, ...]:
        types = gdn_layer_types(self.config.text, self.config.num_hidden_layers)
        kinds: list[LayerKind] = []
        for t in types:
            if t == "linear_attention":
                kinds.append("mamba")
            elif t == "full_attention":
                kinds.append("attention")
            else:
                raise UsageError(f"unknown Qwen layer type {t!r}")
        return tuple(kinds)

    @property
    def family(self):  # type: ignore[override]
        return "moe" if self.is_moe_layer(0) or self._t("num_experts", 0) else "dense"

    def is_moe_layer(self, index: int) -> bool:
        """Qwen3-Next: MoE unless in ``mlp_only_layers`` and when ``(i + 1) %
        decoder_sparse_step == 0`` (Qwen3NextDecoderLayer.__init__)."""
        experts = self._t("num_experts", 0)
        if not experts:
            return False
        if index in (self._t("mlp_only_layers", []) or []):
            return False
        return (index + 1) % (self._t("decoder_sparse_step", 1) or 1) == 0

    def state_dtype_pair(self, ctx: GraphContext) -> tuple[str, str]:
        return state_dtypes(ctx.model_dtype, ctx.mamba_cache_dtype, ctx.mamba_ssm_cache_dtype)

    def mamba_state(self, ctx: GraphContext) -> tuple[StateTensor, ...]:
        """Gated-delta state per rank (Qwen3NextForCausalLM.get_mamba_state_shape_from_config /
        get_mamba_state_dtype_from_config, 0.33.0)."""
        conv, ssm = self.state_dtype_pair(ctx)
        return gdn_state(
            tp=ctx.tensor_parallel_size,
            num_k_heads=self._need("linear_num_key_heads"),
            num_v_heads=self._need("linear_num_value_heads"),
            head_k_dim=self._need("linear_key_head_dim"),
            head_v_dim=self._need("linear_value_head_dim"),
            conv_kernel=self._need("linear_conv_kernel_dim"),
            num_spec=ctx.num_speculative_tokens,
            conv_dtype=conv,
            ssm_dtype=ssm,
        )

    def prefill_checkpoint_alignment(self, ctx: GraphContext, mode: str) -> int | None:
        """64 tokens when every gated-delta layer runs FlashInfer's prefill kernel in "align"
        mode, else None.  FlashInfer is picked on SM 9.0 always and on SM 10.x / 12.x with
        ``linear_key_head_dim == 128`` (the 0.33.0 wheel is built for CUDA 13).  Mirrors
        qwen_gdn_linear_attn.py::_resolve_gdn_prefill_backend and
        QwenGatedDeltaNetAttention.get_prefill_checkpoint_alignment (0.33.0; the 0.32.0
        gated-delta layers export no checkpoint)."""
        if mode != "align" or not ctx.at_least(0, 33):
            return None
        sm = ctx.sm_major
        if sm == 9 or (sm in (10, 12) and self._t("linear_key_head_dim") == 128):
            return GDN_CHECKPOINT_ALIGNMENT
        return None

    def validate_parallel(self, ctx: GraphContext) -> None:
        super().validate_parallel(ctx)
        self.mamba_state(ctx)  # raises when tp does not divide the value heads / channels

    def derived_max_model_len(self) -> int:
        return self.config.max_position_embeddings

    # -- weights --------------------------------------------------------------------------
    def _partial_rotary(self) -> float:
        rp = self.config.text.get("rope_parameters")
        if isinstance(rp, dict) and isinstance(rp.get("partial_rotary_factor"), (int, float)):
            return float(rp["partial_rotary_factor"])
        pr = self.config.text.get("partial_rotary_factor")
        return float(pr) if isinstance(pr, (int, float)) else 1.0

    def ba_replicated(self, ctx: GraphContext) -> bool:
        """Qwen3.5's split in_proj_b/in_proj_a stays whole on every rank under AWQ / GPTQ /
        INC on CUDA (QwenGatedDeltaNetAttention.maybe_disable_tp, 0.33.0)."""
        if self.gqa_interleaved_layout:
            return False
        q = (ctx.quantization or (self.config.quantization_config or {}).get("quant_method") or "").lower()
        return q in ("awq", "gptq", "inc", "auto-round", "awq_marlin", "gptq_marlin")

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        tp = ctx.tensor_parallel_size
        h = cfg.hidden_size
        hd = cfg.head_dim
        kinds = self.layer_kinds()
        start, end = self.layer_range(ctx)
        first = ctx.pipeline_rank == 0
        last = ctx.pipeline_rank == ctx.pipeline_parallel_size - 1
        n_attn = sum(1 for i in range(start, end) if kinds[i] == "attention")
        n_gdn = sum(1 for i in range(start, end) if kinds[i] == "mamba")
        n_moe = sum(1 for i in range(start, end) if self.is_moe_layer(i))
        n_mlp = (end - start) - n_moe
        vocab_rows = pad_vocab(cfg.vocab_size) // tp
        out: list[WeightTensor] = []
        lin = self.linear
        vec = self.vector
        if first:
            out.append(WeightTensor("model.embed_tokens", "embedding", vocab_rows, h))
        if n_attn:
            gate = 2 if self._t("attn_output_gate", True) else 1
            q_rows = cfg.num_attention_heads * gate // tp * hd
            kv_rows = self.attention_kv_heads(tp) * hd
            out += [
                lin("self_attn.qkv_proj", q_rows + 2 * kv_rows, h, n_attn, in_full=h),
                lin("self_attn.o_proj", h, cfg.num_attention_heads // tp * hd, n_attn,
                    in_full=cfg.num_attention_heads * hd),
                vec("self_attn.q_norm+k_norm", hd, 2 * n_attn),
                # each Attention layer's four fp32 scale scalars
                # (vllm/model_executor/layers/attention/attention.py::set_default_quant_scales)
                attention_scales("self_attn.attn", n_attn),
            ]
            if self._t("qkv_bias", False):
                out.append(vec("self_attn.qkv_proj.bias", q_rows + 2 * kv_rows, n_attn, kind="bias"))
        if n_gdn:
            nk, nv = self._need("linear_num_key_heads"), self._need("linear_num_value_heads")
            hk, hv = self._need("linear_key_head_dim"), self._need("linear_value_head_dim")
            kernel = self._need("linear_conv_kernel_dim")
            key_dim, value_dim = nk * hk, nv * hv
            ba_rows = 2 * nv if self.ba_replicated(ctx) else 2 * nv // tp
            out += [
                lin("linear_attn.in_proj_qkvz", (2 * key_dim + 2 * value_dim) // tp, h, n_gdn, in_full=h),
                lin("linear_attn.in_proj_ba", ba_rows, h, n_gdn, in_full=h),
                # conv1d is a ColumnParallelLinear built without a quant config
                lin("linear_attn.conv1d", (2 * key_dim + value_dim) // tp, kernel, n_gdn, quantizable=False),
                vec("linear_attn.dt_bias", nv // tp, n_gdn, kind="bias"),
                vec("linear_attn.A_log", nv // tp, n_gdn, kind="bias", dtype="float32"),
                vec("linear_attn.norm", hv, n_gdn),
                lin("linear_attn.out_proj", h, value_dim // tp, n_gdn, in_full=value_dim),
            ]
        if n_moe:
            e = self._t("num_experts")
            inter = self._t("moe_intermediate_size")
            local, div = experts_per_rank(e, ctx)
            out += [
                WeightTensor("mlp.gate", "router", e, h, n_moe),
                WeightTensor("mlp.shared_expert_gate", "router", 1, h, n_moe),
                WeightTensor("mlp.experts.w13", "expert", 2 * inter // div, h, local * n_moe, True,
                              in_features_full=h, allocations=n_moe),
                WeightTensor("mlp.experts.w2", "expert", h, inter // div, local * n_moe, True,
                              in_features_full=inter, allocations=n_moe),
            ]
            shared = self._t("shared_expert_intermediate_size", 0) or 0
            if shared:
                out += [
                    lin("mlp.shared_expert.gate_up_proj", 2 * shared // tp, h, n_moe, in_full=h),
                    lin("mlp.shared_expert.down_proj", h, shared // tp, n_moe, in_full=shared),
                ]
        if n_mlp:
            inter = cfg.intermediate_size
            out += [
                lin("mlp.gate_up_proj", 2 * inter // tp, h, n_mlp, in_full=h),
                lin("mlp.down_proj", h, inter // tp, n_mlp, in_full=inter),
            ]
        if end > start:
            out.append(vec("input_layernorm+post_attention_layernorm", h, 2 * (end - start)))
            if self._t("layer_scale", False):
                out.append(vec("attn_layer_scale+ffn_layer_scale", h, 2 * (end - start)))
        if last:
            out.append(vec("model.norm", h, 1))
            if not (cfg.tie_word_embeddings and first):
                out.append(WeightTensor("lm_head", "lm_head", vocab_rows, h))
        if n_attn:
            rotary_dim = int(hd * self._partial_rotary())
            out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer", cfg.max_position_embeddings, rotary_dim))
        return out

    @property
    def intermediate_size(self) -> int:
        if self._t("num_experts", 0):
            return int(self._t("moe_intermediate_size")) * int(self._t("num_experts_per_tok", 1))
        return self.config.intermediate_size

    def notes(self) -> tuple[str, ...]:
        notes = []
        if "vision_config" in self.config.raw and not hasattr(self, "vision_weight_tensors"):
            notes.append("the vision encoder's weights are not included in this adapter's tensors")
        return tuple(notes)


@register
class Qwen3Next(_GatedDeltaHybrid):
    """Qwen3-Next: interleaved qkvz / ba projections, every layer MoE
    (vllm/model_executor/models/qwen3_next.py, 0.33.0)."""

    architectures = ("Qwen3NextForCausalLM",)
    gqa_interleaved_layout = True


@register
class Qwen3_5(_GatedDeltaHybrid):
    """Qwen3.5 / Qwen3.6 (dense ``qwen3_5_text`` or MoE ``qwen3_5_moe_text``): split q/k/v/z and
    b/a projections; the text model_type picks MoE for every layer or a dense MLP; the
    recurrent state dtype follows the config's ``mamba_ssm_dtype``
    (vllm/model_executor/models/qwen3_5.py and config.py::Qwen3_5ForConditionalGenerationConfig,
    0.33.0)."""

    architectures = (
        "Qwen3_5ForCausalLM",
        "Qwen3_5MoeForCausalLM",
    )
    gqa_interleaved_layout = False

    def is_moe_layer(self, index: int) -> bool:
        return self.config.text.get("model_type") == "qwen3_5_moe_text"

    def state_dtype_pair(self, ctx: GraphContext) -> tuple[str, str]:
        ssm = ctx.mamba_ssm_cache_dtype
        if ssm == "auto":
            ssm = self._t("mamba_ssm_dtype", "auto")
        return state_dtypes(ctx.model_dtype, ctx.mamba_cache_dtype, ssm)

    @property
    def attention_layer_name(self) -> str:  # type: ignore[override]
        if self.config.architecture.endswith("ConditionalGeneration"):
            return "language_model.model.layers.{i}.self_attn.attn"
        return "model.layers.{i}.self_attn.attn"

    @property
    def mamba_layer_name(self) -> str:  # type: ignore[override]
        if self.config.architecture.endswith("ConditionalGeneration"):
            return "language_model.model.layers.{i}.linear_attn"
        return "model.layers.{i}.linear_attn"
