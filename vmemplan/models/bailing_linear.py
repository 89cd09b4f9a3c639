"""Bailing MoE V2.5 (Ling 2.5 / Ring 2.5): lightning linear attention with MLA full layers and MoE.

Mirrors vllm/model_executor/models/bailing_moe_linear.py (0.33.0):

* ``BailingMoeV25Model``: layer ``i`` is a linear-attention layer when ``layer_group_size > 0``
  and ``(i + 1) % layer_group_size != 0`` (``is_linear_layer``), else an MLA full-attention layer;
* linear layers: vllm/model_executor/layers/mamba/linear/bailing_linear_attn.py::
  BailingMoELinearAttention: a fused MHA ``query_key_value`` (QKVParallelLinear, ``heads``
  query and ``heads`` KV heads of ``head_dim``, bias when ``use_bias`` or ``use_qkv_bias``),
  ``query_layernorm`` / ``key_layernorm`` RMSNorm(head_dim) with ``use_qk_norm``, ``g_proj``
  (ColumnParallelLinear to ``heads × head_dim``), ``dense`` (RowParallelLinear, bias with
  ``use_bias``), ``g_norm`` (BailingGroupRMSNormGate: a weight of ``heads × head_dim / tp``, no
  bias), a neox rotary cache of ``head_dim × partial_rotary_factor``; the recurrent state is
  ``(heads/tp, head_dim, head_dim)`` in the cache dtype (LinearAttention.get_state_shape →
  MambaStateShapeCalculator.linear_attention_state_shape); the decay slopes ``slope_rate``
  (fp32, all heads) are a plain device tensor, neither parameter nor buffer, and ``tp_slope``
  is a contiguous slice of it (the same storage);
* MLA layers: ``BailingMoeV25MLAAttention``: ``q_proj`` (or ``fused_qkv_a_proj`` +
  ``q_a_layernorm`` + ``q_b_proj`` with ``q_lora_rank``), ``kv_a_proj_with_mqa`` (replicated),
  ``kv_a_layernorm``, ``kv_b_proj``, ``o_proj``, and a non-neox rotary cache of
  ``qk_rope_head_dim`` (the partial factor dropped); the MLA wrapper's attention is
  ``self_attn.attn``;
* MLP: layer ``i`` is MoE when ``num_experts > 1`` and ``i >= first_k_dense_replace``
  (``BailingMoeV25``: a GateLinear router ``[E, H]`` in fp32 unless ``router_dtype`` names
  another (then bf16), an fp32 ``expert_bias`` with ``moe_router_enable_expert_bias``, the fused
  experts, shared experts as one BailingMLP of ``moe_shared_expert_intermediate_size`` (or
  ``moe_intermediate_size``) × ``num_shared_experts``), else a BailingMLP of
  ``intermediate_size``; biases with ``use_bias``;
* ``word_embeddings`` (first stage), ``norm`` and an untied ``lm_head`` (last stage: vLLM never
  ties them here).
"""

from __future__ import annotations

from vmemplan.core.errors import ModelConfigError, UsageError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.hybrid import LayerKind, StateTensor, kda_state, kda_state_dtypes, state_dtypes
from vmemplan.models.mixer_blocks import (
    LinearMlaHybrid,
    embedding_tensors,
    fused_expert_tensors,
    head_tensors,
    mla_attention_tensors,
    mlp_tensors,
    stated_head_dim,
)

__all__ = ["BailingMoeV25", "BailingMoeV3"]


def _int(value, default: int = 0) -> int:
    if value is None or isinstance(value, bool):
        return default
    return int(value)


def _scaled_rope(rs) -> bool:
    """Whether a rope dict asks for a scaling other than the default rotary cache."""
    return isinstance(rs, dict) and rs.get("rope_type", rs.get("type", "default")) not in (None, "default")


@register
class BailingMoeV25(LinearMlaHybrid):
    """``BailingMoeV2_5ForCausalLM``: Ling-2.5 / Ring-2.5 (linear attention + MLA + MoE)."""

    architectures = ("BailingMoeV2_5ForCausalLM",)
    attention_layer_name = "model.layers.{i}.self_attn.attn"

    # -- layout ---------------------------------------------------------------------------
    def _is_linear(self, i: int) -> bool:
        g = _int(self._get("layer_group_size", 1), 1)
        return g > 0 and (i + 1) % g != 0

    def layer_kinds(self) -> tuple[LayerKind, ...]:
        return tuple("mamba" if self._is_linear(i) else "mla" for i in range(self.config.num_hidden_layers))

    @property
    def linear_head_dim(self) -> int:
        """``config.head_dim`` as vLLM reads it.  A ``model_type`` of "bailing_hybrid" (what the
        Ling/Ring 2.5 checkpoints declare) is parsed by transformers' built-in
        BailingHybridConfig (transformers 5.20, configuration_bailing_hybrid.py), whose
        ``__post_init__`` sets ``head_dim = qk_rope_head_dim``: the linear layers then run at that
        width (the oracle on vLLM 0.33.0 builds ``(heads/tp, 64, 64)`` states for the defaults)."""
        text = self.config.text
        if text.get("model_type") == "bailing_hybrid":
            return _int(self._get("qk_rope_head_dim", 64), 64)
        return stated_head_dim(self.config)

    @property
    def mla_head_size(self) -> int:
        return _int(self._get("kv_lora_rank", 512)) + _int(self._get("qk_rope_head_dim", 64))

    def mamba_state(self, ctx: GraphContext) -> tuple[StateTensor, ...]:
        """``(heads/tp, head_dim, head_dim)`` in the mamba cache dtype ("auto": the model dtype)
        (MambaStateShapeCalculator.linear_attention_state_shape / linear_attention_state_dtype)."""
        dtype, _ = state_dtypes(ctx.model_dtype, ctx.mamba_cache_dtype)
        self.check_heads(ctx)
        hd = self.linear_head_dim
        return (StateTensor("linear_attn", (self.config.num_attention_heads // ctx.tensor_parallel_size, hd, hd), dtype),)

    def validate_parallel(self, ctx: GraphContext) -> None:
        self.check_heads(ctx)
        tp = ctx.tensor_parallel_size
        if any(self._is_linear(i) for i in range(self.config.num_hidden_layers)):
            g = _int(self._get("group_norm_size", 1), 1)
            if tp > g or g % tp:
                raise UsageError(f"--tensor-parallel-size {tp} must divide group_norm_size {g} "
                                 "(BailingMoELinearAttention's local group norm)")

    # -- MoE facts ------------------------------------------------------------------------
    def is_moe_layer(self, i: int) -> bool:
        return _int(self._get("num_experts", 0)) > 1 and i >= _int(self._get("first_k_dense_replace", 0))

    @property
    def intermediate_size(self) -> int:
        return _int(self._get("moe_intermediate_size")) * _int(self._get("num_experts_per_tok", 1), 1)

    def _router_dtype(self) -> str:
        value = self.config.text.get("router_dtype")
        return "float32" if value is None or value == "fp32" else "bfloat16"

    def _shared_intermediate(self) -> int:
        n = _int(self._get("num_shared_experts", 0))
        if n <= 0:
            return 0
        text = self.config.text
        per = text["moe_shared_expert_intermediate_size"] if "moe_shared_expert_intermediate_size" in text \
            else self._get("moe_intermediate_size")
        return _int(per) * n

    # -- rotary caches ----------------------------------------------------------------------
    def _partial_rotary(self) -> float:
        rp = self.config.text.get("rope_parameters")
        if isinstance(rp, dict) and isinstance(rp.get("partial_rotary_factor"), (int, float)):
            return float(rp["partial_rotary_factor"])
        v = self.config.text.get("partial_rotary_factor")
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 1.0

    def rope_tensors(self, n_linear: int, n_mla: int) -> list[WeightTensor]:
        """One cos/sin cache per distinct get_rope call (get_rope caches by its arguments):
        ``[max_position_embeddings, head_dim × partial]`` for the linear layers (neox) and
        ``[max_position_embeddings, qk_rope_head_dim]`` for the MLA layers (non-neox)."""
        positions = _int(self._get("max_position_embeddings", 8192), 8192)
        if _scaled_rope(self.config.rope_scaling()):
            raise ModelConfigError("BailingMoeV2_5 with rope_scaling is not modelled (the default configs have none)")
        out: list[WeightTensor] = []
        if n_linear:
            out.append(WeightTensor("linear.rotary_emb.cos_sin_cache", "buffer", positions,
                                    int(self.linear_head_dim * self._partial_rotary())))
        if n_mla:
            out.append(WeightTensor("mla.rotary_emb.cos_sin_cache", "buffer", positions,
                                    _int(self._get("qk_rope_head_dim", 64))))
        return out

    # -- tensors -----------------------------------------------------------------------------
    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        span = self.rank_span(ctx)
        tp, h = span.tp, span.hidden
        rng = range(span.start, span.end)
        lin, vec = self.linear, self.vector
        use_bias = bool(self._get("use_bias", False))
        out = embedding_tensors(span, "model.word_embeddings")
        n_lin = sum(1 for i in rng if self._is_linear(i))
        n_mla = len(rng) - n_lin
        if n_lin:
            nh, hd = cfg.num_attention_heads, self.linear_head_dim
            inner = nh * hd
            out += [
                lin("self_attn.query_key_value", 3 * inner // tp, h, n_lin, in_full=h),
                lin("self_attn.g_proj", inner // tp, h, n_lin, in_full=h),
                lin("self_attn.dense", h, inner // tp, n_lin, in_full=inner),
                vec("self_attn.g_norm", inner // tp, n_lin),
                # the decay slopes: a plain fp32 device tensor of all heads per layer (tp_slope,
                # this rank's slice, is a view of it)
                vec("self_attn.slope_rate", nh, n_lin, kind="buffer", dtype="float32"),
            ]
            if use_bias or self._get("use_qkv_bias", False):
                out.append(vec("self_attn.query_key_value.bias", 3 * inner // tp, n_lin, kind="bias"))
            if use_bias:
                out.append(vec("self_attn.dense.bias", h, n_lin, kind="bias"))
            if self._get("use_qk_norm", False):
                out.append(vec("self_attn.query_layernorm+key_layernorm", hd, 2 * n_lin))
        if n_mla:
            q_lora = self._get("q_lora_rank")
            out += mla_attention_tensors(
                "self_attn", tp=tp, hidden=h, heads=cfg.num_attention_heads,
                nope=_int(self._get("qk_nope_head_dim", 128)), rope=_int(self._get("qk_rope_head_dim", 64)),
                v=_int(self._get("v_head_dim", 128)), kv_lora=_int(self._get("kv_lora_rank", 512)),
                q_lora=int(q_lora) if q_lora else None, count=n_mla,
            )
        n_moe = sum(1 for i in rng if self.is_moe_layer(i))
        if n_moe:
            e = _int(self._get("num_experts"))
            out.append(WeightTensor("mlp.gate", "router", e, h, n_moe, dtype=self._router_dtype()))
            if self._get("moe_router_enable_expert_bias", False):
                out.append(WeightTensor("mlp.gate.expert_bias", "router", e, 1, n_moe, dtype="float32"))
            out += fused_expert_tensors("mlp.experts", num_experts=e, inter=_int(self._get("moe_intermediate_size")),
                                        hidden=h, count=n_moe, ctx=ctx)
            shared = self._shared_intermediate()
            if shared:
                out += mlp_tensors("mlp.shared_experts", tp=tp, hidden=h, inter=shared, count=n_moe, bias=use_bias)
        n_dense = len(rng) - n_moe
        if n_dense:
            out += mlp_tensors("mlp", tp=tp, hidden=h, inter=cfg.intermediate_size, count=n_dense, bias=use_bias)
        if len(rng):
            out.append(vec("input_layernorm+post_attention_layernorm", h, 2 * len(rng)))
        out += head_tensors(span, tied=False)  # vLLM never ties them here
        return out + self.rope_tensors(n_lin, n_mla)


@register
class BailingMoeV3(BailingMoeV25):
    """``BailingMoeV3ForCausalLM`` (Ling 3.0): Kimi-delta-attention layers, gated MLA full layers,
    Bailing MoE.  Mirrors vllm/model_executor/models/bailing_moe_v3.py (0.33.0):

    * layer ``i`` is KDA unless ``(i + 1) % layer_group_size == 0`` or ``i`` lies in the trailing
      partial group (``i >= L // g * g``) (``_is_kda_layer``);
    * BailingMoeV3KimiDeltaAttention (``no_kda_lora`` required): ``qkvb_proj`` (Merged
      ``[P, P, P, heads]``, P = heads × head_dim), ``f_proj`` and ``g_proj`` (H → P), fp32
      ``dt_bias [P/tp]``, three fp32 short convolutions ``q/k/v_conv1d [P/tp, 1, kernel]``, fp32
      ``A_log [heads/tp]``, ``o_norm`` (weight of head_dim), ``o_proj``; its state is
      kda_state_shape / kda_state_dtype (conv ``(kernel - 1 + spec, 3P/tp)``, fp32 recurrent);
    * BailingMoeV3MLAAttention: the MLA projections, a ``g_proj`` gate of ``heads``
      (head_wise) or ``heads × v_head_dim`` (element_wise) outputs, ``dense`` (no bias) and a
      non-neox rotary cache of ``qk_rope_head_dim`` (partial factor dropped);
    * BailingMoeV3MoE: an fp32 router and fp32 ``expert_bias`` always, shared experts of
      ``moe_shared_expert_intermediate_size × num_shared_experts``.
    """

    architectures = ("BailingMoeV3ForCausalLM",)

    def _is_linear(self, i: int) -> bool:
        g = _int(self._get("layer_group_size", 1), 1)
        n = self.config.num_hidden_layers
        return not ((i + 1) % g == 0 or i >= n // g * g)

    def mamba_state(self, ctx: GraphContext) -> tuple[StateTensor, ...]:
        conv, rec = kda_state_dtypes(ctx.model_dtype, ctx.mamba_cache_dtype, ctx.mamba_ssm_cache_dtype)
        return kda_state(tp=ctx.tensor_parallel_size, num_heads=self.config.num_attention_heads,
                         head_dim=self.linear_head_dim, conv_kernel=_int(self._get("short_conv_kernel_size", 4), 4),
                         num_spec=ctx.num_speculative_tokens, conv_dtype=conv, rec_dtype=rec)

    def validate_parallel(self, ctx: GraphContext) -> None:
        self.check_heads(ctx)
        if not self._get("no_kda_lora", False):
            raise ModelConfigError("BailingMoeV3 KDA expects no_kda_lora=True (vLLM 0.33.0 refuses otherwise)")

    def is_moe_layer(self, i: int) -> bool:
        return self.config.text.get("num_experts") is not None and i >= _int(self._get("first_k_dense_replace", 0))

    def _router_dtype(self) -> str:
        return "float32"

    def _shared_intermediate(self) -> int:
        return _int(self._get("moe_shared_expert_intermediate_size")) * _int(self._get("num_shared_experts", 0))

    def rope_tensors(self, n_linear: int, n_mla: int) -> list[WeightTensor]:
        positions = _int(self._get("max_position_embeddings", 8192), 8192)
        if _scaled_rope(self.config.rope_scaling()):
            raise ModelConfigError("BailingMoeV3 with rope_scaling is not modelled")
        if not n_mla:
            return []
        return [WeightTensor("mla.rotary_emb.cos_sin_cache", "buffer", positions,
                             _int(self._get("qk_rope_head_dim", 64)))]

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        # the V2.5 list, then the V3 attention blocks swapped in
        out = [t for t in super().weight_tensors(ctx) if not t.name.startswith("self_attn.")
               or t.name.startswith("self_attn.mla_attn.") or t.name in self._mla_names()]
        span = self.rank_span(ctx)
        tp, h = span.tp, span.hidden
        n_kda = sum(1 for i in range(span.start, span.end) if self._is_linear(i))
        n_mla = span.layers - n_kda
        lin, vec = self.linear, self.vector
        nh = self.config.num_attention_heads
        # the MLA output projection is named ``dense`` here (the KDA one ``o_proj``)
        out = [WeightTensor("self_attn.dense", t.kind, t.rows, t.cols, t.count, t.quantizable, t.dtype,
                            t.in_features_full) if t.name == "self_attn.o_proj" else t for t in out]
        if n_kda:
            hd = self.linear_head_dim
            p = nh * hd
            kernel = _int(self._get("short_conv_kernel_size", 4), 4)
            out += [
                lin("self_attn.qkvb_proj", (3 * p + nh) // tp, h, n_kda, in_full=h),
                lin("self_attn.f_proj", p // tp, h, n_kda, in_full=h),
                lin("self_attn.g_proj", p // tp, h, n_kda, in_full=h),
                vec("self_attn.dt_bias", p // tp, n_kda, kind="bias", dtype="float32"),
                lin("self_attn.q/k/v_conv1d", p // tp, kernel, 3 * n_kda, quantizable=False, dtype="float32"),
                vec("self_attn.A_log", nh // tp, n_kda, kind="bias", dtype="float32"),
                vec("self_attn.o_norm", hd, n_kda),
                lin("self_attn.o_proj", h, p // tp, n_kda, in_full=p),
            ]
        if n_mla:
            v = _int(self._get("v_head_dim", 128))
            kind = self._get("gated_attention_proj_granularity_type")
            g_out = nh if kind == "head_wise" else nh * v if kind == "element_wise" else 0
            if g_out:
                out.append(lin("self_attn.mla_g_proj", g_out // tp, h, n_mla, in_full=h))
        return out

    @staticmethod
    def _mla_names() -> frozenset[str]:
        return frozenset(("self_attn.fused_qkv_a_proj", "self_attn.q_a_layernorm", "self_attn.q_b_proj",
                          "self_attn.q_proj", "self_attn.kv_a_proj_with_mqa", "self_attn.kv_a_layernorm",
                          "self_attn.kv_b_proj", "self_attn.o_proj"))
