"""openPangu MoE decoders (``PanguUltraMoEForCausalLM``, ``PanguProMoEV2ForCausalLM``) on their
MLA path.

Mirrors vllm/model_executor/models/openpangu.py (0.33.0).  OpenPanguDecoderLayer takes MLA
(OpenPanguMLAAttention) when the config has ``qk_nope_head_dim``, ``qk_rope_head_dim``,
``v_head_dim`` and ``kv_lora_rank``: DeepSeek-V2's projections (a replicated fused
``q_a_proj + kv_a_proj_with_mqa`` with a ``q_lora_rank``, else a column-parallel ``q_proj`` and a
replicated ``kv_a_proj_with_mqa``; ``kv_a_layernorm``, ``kv_b_proj``, ``o_proj``) around
MultiHeadLatentAttentionWrapper, so one latent cache per layer and the decode copies of
:mod:`vmemplan.models.mla_copies`.  Its rotary embedding is a DeepSeek YaRN of factor 1 whatever
the config says (``original_max_position_embeddings = max_position_embeddings``): a cache of
``[max_position_embeddings, qk_rope_head_dim]``.

Layers at or past ``first_k_dense_replace`` hold OpenPanguMoE when ``n_routed_experts`` is set: a
GateLinear router in the model dtype, an fp32 ``e_score_correction_bias`` only under
``router_enable_expert_bias``, a TP-split shared expert of ``moe_intermediate_size ×
n_shared_experts`` when ``n_shared_experts`` is not None, and the fused experts.  The others hold
OpenPanguMLP (biased under ``mlp_bias``).  Two RMSNorms per layer, four under ``sandwich_norm``.
The MTP layers are the separate OpenPanguMTP drafter (not counted here).

Without the MLA keys the layer takes OpenPanguSinkAttention when ``param_sink_number`` > 0: a
MergedColumnParallelLinear ``qkv_proj`` of ``heads × (qk_nope_dim + qk_rope_dim)`` queries,
``kv_heads × (qk_nope_dim + qk_rope_dim)`` keys and ``kv_heads × v_channels`` values (split over
TP; KV heads are never replicated), ``o_proj`` from ``heads × v_channels``, a ``k_layernorm`` of the
key head, ``param_sink_key`` ``[sinks, kv_heads/tp, head_dim]`` and ``param_sink_value``
``[sinks, kv_heads/tp, v_channels]`` (a parameter, or a zero buffer without
``param_sink_with_value``) in the config's ``torch_dtype``, the normed sink key StaticSinkAttention
keeps (``update_sink_kv``, a tensor of the key's shape), a rotary table of
``[max_position_embeddings, qk_rope_dim]`` and StaticSinkAttention, whose cache is
SinkFullAttentionSpec: a full-attention spec with ``head_size`` = key head and ``head_size_v`` =
``v_channels`` (vllm/model_executor/layers/attention/static_sink_attention.py::
StaticSinkAttention.get_kv_cache_spec).  Otherwise OpenPanguEmbeddedAttention: a QKVParallelLinear
``qkv_proj`` of ``head_dim`` (default ``hidden / heads``), ``o_proj`` and an ordinary full-attention
cache.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.core.kv_specs import FullAttentionSpec, kv_dtype_bytes
from vmemplan.core.units import dtype_bytes
from vmemplan.models.base import Adapter, register
from vmemplan.models.deepseek import DeepseekMLA
from vmemplan.models.moe_blocks import gated_mlp_biases

__all__ = ["OpenPanguMoE"]


@register
class OpenPanguMoE(DeepseekMLA):
    """openPangu-Ultra-MoE / Pro-MoE-V2 with MLA attention (DeepseekMLA with openPangu's MoE keys,
    sandwich norms and its fixed rotary table)."""

    architectures = ("PanguUltraMoEForCausalLM", "PanguProMoEV2ForCausalLM")

    # -- which attention (OpenPanguDecoderLayer.__init__) ------------------------------
    def attention_kind(self) -> str:
        """``mla`` when the config has the four MLA keys (vLLM tests ``hasattr``), ``sink`` when
        ``param_sink_number`` > 0, else ``standard``."""
        text = self.config.text
        if all(k in text for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "kv_lora_rank")):
            return "mla"
        if (text.get("param_sink_number") or 0) > 0:
            return "sink"
        return "standard"

    @property
    def latent_head_size(self) -> int:
        """The latent head of the MLA path; absent (AttributeError) on the sink and standard paths,
        which are not MLA for vLLM's backend selection."""
        if self.attention_kind() != "mla":
            raise AttributeError("latent_head_size")
        return self.kv_lora_rank + self.qk_rope_head_dim

    def _dims(self, tp: int) -> tuple[int, int, int, int]:
        """(query heads, KV heads, key head size, value head size) on one rank."""
        text = self.config.text
        cfg = self.config
        kv = int(text.get("num_key_value_heads") or cfg.num_attention_heads)
        if self.attention_kind() == "sink":
            hd = int(text["qk_nope_dim"]) + int(text["qk_rope_dim"])
            return cfg.num_attention_heads // tp, kv // tp, hd, int(text["v_channels"])
        hd = int(text.get("head_dim") or cfg.hidden_size // cfg.num_attention_heads)
        return cfg.num_attention_heads // tp, max(1, kv // tp), hd, hd

    def validate_parallel(self, ctx: GraphContext) -> None:
        if self.attention_kind() == "mla":
            return super().validate_parallel(ctx)
        Adapter.validate_parallel(self, ctx)
        kv = int(self.config.text.get("num_key_value_heads") or self.config.num_attention_heads)
        if self.attention_kind() == "sink" and kv < ctx.tensor_parallel_size:
            raise UsageError(
                f"--tensor-parallel-size {ctx.tensor_parallel_size} exceeds the {kv} KV heads, which "
                "openPangu's sink attention does not replicate",
                hint=f"use at most {kv}",
            )

    def attention_tensors(self, n: int, ctx: GraphContext, input_size: int | None = None) -> list[WeightTensor]:
        kind = self.attention_kind()
        if kind == "mla":
            return super().attention_tensors(n, ctx, input_size)
        text = self.config.text
        tp = ctx.tensor_parallel_size
        h = self.config.hidden_size
        heads, kv, hd, vd = self._dims(tp)
        bias = bool(text.get("attention_bias") or text.get("bias"))
        qkv_bias = bool(text["qkv_bias"]) if "qkv_bias" in text else bias
        qkv_rows = heads * hd + kv * hd + kv * vd
        out = [
            WeightTensor("self_attn.qkv_proj", "linear", qkv_rows, h, n, True, in_features_full=h),
            WeightTensor("self_attn.o_proj", "linear", h, heads * vd, n, True,
                         in_features_full=self.config.num_attention_heads * vd),
        ]
        if qkv_bias:
            out.append(WeightTensor("self_attn.qkv_proj.bias", "bias", qkv_rows, 1, n))
        if bias:
            out.append(WeightTensor("self_attn.o_proj.bias", "bias", h, 1, n))
        if kind == "sink":
            sinks = int(text["param_sink_number"])
            raw = text.get("torch_dtype") or text.get("dtype")
            dtype = str(raw).removeprefix("torch.") if isinstance(raw, str) else None
            out += [
                WeightTensor("self_attn.k_layernorm", "norm", hd, 1, n),
                WeightTensor("self_attn.param_sink_key", "buffer", sinks * kv, hd, n, dtype=dtype),
                WeightTensor("self_attn.param_sink_value", "buffer", sinks * kv, vd, n, dtype=dtype),
                # post_weight_load: StaticSinkAttention.update_sink_kv keeps k_layernorm(param_sink_key),
                # a new tensor (the sink value is the parameter itself)
                WeightTensor("self_attn.attn.sink_key", "buffer", sinks * kv, hd, n, dtype=dtype),
            ]
        out.append(attention_scales("self_attn.attn", n))
        return out

    def is_moe_layer(self, index: int) -> bool:
        """OpenPanguDecoderLayer: MoE when ``n_routed_experts`` is not None and the layer is at or
        past ``first_k_dense_replace`` (no stride)."""
        text = self.config.text
        if text.get("n_routed_experts") is None:
            return False
        first = text.get("first_k_dense_replace")
        return index >= int(first if first is not None else self.config.num_hidden_layers)

    def num_mtp_layers(self, ctx: GraphContext) -> int:
        return 0

    def router_bias(self) -> bool:
        return bool(self.config.text.get("router_enable_expert_bias"))

    def mlp_tensors(self, dense: int, moe: int, ctx: GraphContext) -> list[WeightTensor]:
        out = super().mlp_tensors(dense, moe, ctx)
        if self.config.text.get("mlp_bias"):
            out += gated_mlp_biases("mlp", self.config.intermediate_size, self.config.hidden_size, dense,
                                    ctx.tensor_parallel_size)
        return out

    def extra_layer_tensors(self, n: int, ctx: GraphContext) -> list[WeightTensor]:
        if self.config.text.get("sandwich_norm"):
            return [WeightTensor("pre_mlp_layernorm+post_mlp_layernorm", "norm", self.config.hidden_size, 1, 2 * n)]
        return []

    def rope_cache(self, ctx: GraphContext | None = None) -> WeightTensor:
        """OpenPanguMLAAttention's DeepSeek YaRN of factor 1: ``max_position_embeddings`` rows (in
        fp32 under the rotary custom op, as :meth:`DeepseekMLA.rope_cache`)."""
        t = super().rope_cache(ctx)
        kind = self.attention_kind()
        if kind != "mla":
            # get_rope of the key head: the rotary part only (qk_rope_dim of a sink head)
            text = self.config.text
            cols = int(text["qk_rope_dim"]) if kind == "sink" else self._dims(1)[2]
            rows = int(text.get("max_position_embeddings") or 8192)
            return WeightTensor(t.name, t.kind, rows, cols)
        positions = int(self.config.text.get("max_position_embeddings") or 8192)
        return WeightTensor(t.name, t.kind, positions, t.cols, dtype=t.dtype)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        if self.config.tie_word_embeddings and ctx.pipeline_rank == 0:
            # ParallelLMHead.tie_weights: the head is the embedding's storage
            out = [t for t in out if t.name != "lm_head"]
        return out

    # -- KV cache ---------------------------------------------------------------------
    def resolve_block_size(self, ctx: GraphContext, *, user_block_size: int | None, default: int) -> int:
        if self.attention_kind() == "mla":
            return super().resolve_block_size(ctx, user_block_size=user_block_size, default=default)
        return Adapter.resolve_block_size(self, ctx, user_block_size=user_block_size, default=default)

    def resolve_cache_dtype(self, ctx: GraphContext, cache_dtype: str) -> str:
        if self.attention_kind() == "mla":
            return super().resolve_cache_dtype(ctx, cache_dtype)
        return cache_dtype

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        if self.attention_kind() == "mla":
            return super().kv_cache_specs(ctx)
        _, kv, hd, vd = self._dims(ctx.tensor_parallel_size)
        spec = FullAttentionSpec(
            block_size=ctx.block_size, num_kv_heads=kv, head_size=hd,
            cache_dtype=ctx.model_dtype if ctx.cache_dtype == "auto" else ctx.cache_dtype,
            dtype_bytes=kv_dtype_bytes(ctx.cache_dtype, dtype_bytes(ctx.model_dtype)),
            head_size_v=vd if vd != hd else None,
        )
        return {f"model.layers.{i}.self_attn.attn": spec for i in self._layer_indices(ctx)}

    def notes(self) -> tuple[str, ...]:
        kind = self.attention_kind()
        if kind == "mla":
            return super().notes()
        if kind == "sink":
            return ("openPangu sink attention: keys of qk_nope_dim + qk_rope_dim, values of v_channels, "
                    "param_sink_number static sink tokens written into the first cache blocks",)
        return ()
