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
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.hybrid import LayerKind, StateTensor, gdn_state, state_dtypes
from vmemplan.models.mixer_blocks import (
    RecurrentHybrid,
    embedding_tensors,
    fused_expert_tensors,
    gqa_attention_tensors,
    head_tensors,
    mlp_tensors,
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


class _GatedDeltaHybrid(RecurrentHybrid):
    """Shared body of Qwen3-Next and Qwen3.5."""

    attention_layer_name = "model.layers.{i}.self_attn.attn"
    mamba_layer_name = "model.layers.{i}.linear_attn"
    #: Qwen3-Next stores in_proj_qkvz / in_proj_ba as one interleaved shard each
    gqa_interleaved_layout = True
    #: the ``layer_types`` entries that are attention layers (the rest: ``linear_attention``)
    attention_layer_types: tuple[str, ...] = ("full_attention",)
    #: the family's name in the error for an unknown layer type
    layer_type_family = "Qwen"

    # -- config facts ---------------------------------------------------------------------
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
            elif t in self.attention_layer_types:
                kinds.append("attention")
            else:
                raise UsageError(f"unknown {self.layer_type_family} layer type {t!r}")
        return tuple(kinds)

    @property
    def family(self):  # type: ignore[override]
        return "moe" if self.is_moe_layer(0) or self._get("num_experts", 0) else "dense"

    def is_moe_layer(self, index: int) -> bool:
        """Qwen3-Next: MoE unless in ``mlp_only_layers`` and when ``(i + 1) %
        decoder_sparse_step == 0`` (Qwen3NextDecoderLayer.__init__)."""
        experts = self._get("num_experts", 0)
        if not experts:
            return False
        if index in (self._get("mlp_only_layers", []) or []):
            return False
        return (index + 1) % (self._get("decoder_sparse_step", 1) or 1) == 0

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
        if sm == 9 or (sm in (10, 12) and self._get("linear_key_head_dim") == 128):
            return GDN_CHECKPOINT_ALIGNMENT
        return None

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

    def gated_delta_tensors(self, ctx: GraphContext, count: int, *, ba_replicated: bool = False) -> list[WeightTensor]:
        """The gated-delta-net mixer of ``count`` layers: fused in_proj_qkvz and in_proj_ba, the
        conv1d (a ColumnParallelLinear built without a quant config), dt_bias, fp32 A_log, the
        gated norm and out_proj (vllm/model_executor/models/qwen3_next.py::Qwen3NextGatedDeltaNet,
        0.33.0)."""
        tp, h = ctx.tensor_parallel_size, self.config.hidden_size
        lin, vec = self.linear, self.vector
        nk, nv = self._need("linear_num_key_heads"), self._need("linear_num_value_heads")
        hk, hv = self._need("linear_key_head_dim"), self._need("linear_value_head_dim")
        kernel = self._need("linear_conv_kernel_dim")
        key_dim, value_dim = nk * hk, nv * hv
        return [
            lin("linear_attn.in_proj_qkvz", (2 * key_dim + 2 * value_dim) // tp, h, count, in_full=h),
            lin("linear_attn.in_proj_ba", 2 * nv if ba_replicated else 2 * nv // tp, h, count, in_full=h),
            lin("linear_attn.conv1d", (2 * key_dim + value_dim) // tp, kernel, count, quantizable=False),
            vec("linear_attn.dt_bias", nv // tp, count, kind="bias"),
            vec("linear_attn.A_log", nv // tp, count, kind="bias", dtype="float32"),
            vec("linear_attn.norm", hv, count),
            lin("linear_attn.out_proj", h, value_dim // tp, count, in_full=value_dim),
        ]

    def sparse_moe_tensors(self, ctx: GraphContext, count: int) -> list[WeightTensor]:
        """The sparse-MoE block of ``count`` layers: router, shared-expert gate, fused experts and
        the shared expert's MLP (qwen3_next.py::Qwen3NextSparseMoeBlock, 0.33.0)."""
        tp, h = ctx.tensor_parallel_size, self.config.hidden_size
        e, inter = self._get("num_experts"), self._get("moe_intermediate_size")
        out = [
            WeightTensor("mlp.gate", "router", e, h, count),
            WeightTensor("mlp.shared_expert_gate", "router", 1, h, count),
            *fused_expert_tensors("mlp.experts", num_experts=e, inter=inter, hidden=h, count=count, ctx=ctx),
        ]
        shared = self._get("shared_expert_intermediate_size", 0) or 0
        if shared:
            out += mlp_tensors("mlp.shared_expert", tp=tp, hidden=h, inter=shared, count=count)
        return out

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        span = self.rank_span(ctx)
        tp, h = span.tp, span.hidden
        hd = cfg.head_dim
        kinds = self.stage_kinds(span)
        n_attn, n_gdn = kinds["attention"], kinds["mamba"]
        n_moe = sum(1 for i in range(span.start, span.end) if self.is_moe_layer(i))
        n_mlp = span.layers - n_moe
        vec = self.vector
        out = embedding_tensors(span)
        if n_attn:
            out += gqa_attention_tensors("self_attn", tp=tp, hidden=h, heads=cfg.num_attention_heads,
                                         kv_heads_local=self.attention_kv_heads(tp), head_dim=hd, count=n_attn,
                                         gate=2 if self._get("attn_output_gate", True) else 1,
                                         norms=(vec("self_attn.q_norm+k_norm", hd, 2 * n_attn),),
                                         qkv_bias=bool(self._get("qkv_bias", False)))
        if n_gdn:
            out += self.gated_delta_tensors(ctx, n_gdn, ba_replicated=self.ba_replicated(ctx))
        if n_moe:
            out += self.sparse_moe_tensors(ctx, n_moe)
        if n_mlp:
            out += mlp_tensors("mlp", tp=tp, hidden=h, inter=cfg.intermediate_size, count=n_mlp)
        if span.layers:
            out.append(vec("input_layernorm+post_attention_layernorm", h, 2 * span.layers))
            if self._get("layer_scale", False):
                out.append(vec("attn_layer_scale+ffn_layer_scale", h, 2 * span.layers))
        out += head_tensors(span, tied=cfg.tie_word_embeddings)
        if n_attn:
            rotary_dim = int(hd * self._partial_rotary())
            out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer", cfg.max_position_embeddings, rotary_dim))
        return out

    @property
    def intermediate_size(self) -> int:
        if self._get("num_experts", 0):
            return int(self._get("moe_intermediate_size")) * int(self._get("num_experts_per_tok", 1))
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
            ssm = self._get("mamba_ssm_dtype", "auto")
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
