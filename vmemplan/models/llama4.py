"""Llama-4 (``Llama4ForCausalLM`` / ``Llama4ForConditionalGeneration``): chunked local attention
on RoPE layers, global attention on the NoPE layers, MoE with a shared expert.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.models.base import register
from vmemplan.models.moe_blocks import windowed_stage_attention
from vmemplan.models.windowed import (
    _attention_spec,
    _check_heads,
    _int,
    _kv_heads,
    _rope_positions,
    _WindowedBase,
    moe_shard,
)

__all__ = ["Llama4", "llama4_no_rope_layers", "chunked_attention_uses_hybrid_manager"]


def llama4_no_rope_layers(text: Mapping[str, Any]) -> list[int]:
    """``no_rope_layers`` (1 = RoPE + chunked local attention, 0 = NoPE global layer).

    An empty or missing list takes transformers' default (Llama4TextConfig): every
    ``no_rope_layer_interval``-th layer (default 4th) is NoPE."""
    n = _int(text, "num_hidden_layers")
    given = text.get("no_rope_layers")
    if isinstance(given, list) and given:
        if len(given) < n:
            raise UsageError(f"no_rope_layers lists {len(given)} layers for {n} hidden layers")
        return [int(x) for x in given[:n]]
    interval = text.get("no_rope_layer_interval", 4)
    if not isinstance(interval, int) or interval < 1:
        interval = 4
    return [int((i + 1) % interval != 0) for i in range(n)]


def chunked_attention_uses_hybrid_manager(vllm_version: Sequence[int] | None = None, *,
                                          speculative_method: str | None = None) -> bool:
    """Whether chunked local layers keep their own spec (hybrid KV cache manager on).

    Mirrors VllmConfig.__post_init__ (vllm/config/vllm.py, 0.33.0): with
    ``attention_chunk_size`` set the manager is disabled for EAGLE-style speculation, or
    when ``VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE`` is 0.  That variable
    defaults to 1 from 0.17.0 (read in 0.17.0 … 0.33.0 envs.py) and to 0 in 0.10.x–0.13.0;
    releases 0.14–0.16 were not read and are treated as 0.17.0.  With the manager off the
    chunked layers are allocated as full attention.
    """
    if speculative_method and ("eagle" in speculative_method.lower() or speculative_method == "mtp"):
        return False
    if vllm_version is not None and tuple(vllm_version[:2]) < (0, 14):
        return False
    return True


@register
class Llama4(_WindowedBase):
    """Llama-4 text model (vllm/model_executor/models/llama4.py, 0.33.0).

    Attention: fused ``qkv_proj`` / ``o_proj`` without biases; RoPE layers use
    ``ChunkedLocalAttention(attention_chunk_size)``, NoPE layers (``no_rope_layers[i] == 0``)
    plain global attention; the qk norm (RoPE layers only) has no weight but keeps an fp32 ones
    tensor ``[head_dim]``; every attention layer holds the four fp32 scale scalars.  FFN: layer ``i`` is MoE when
    ``(i + 1) % interleave_moe_layer_step == 0`` (router ``[E, H]``, experts of width
    ``intermediate_size``, one shared expert as a TP-split gated MLP of the same width),
    otherwise a dense MLP of width ``intermediate_size_mlp``.  One rotary cache (llama3
    scaling keeps ``max_position_embeddings`` rows).  Untied head.
    The KV specs follow 0.33.0's default (hybrid manager on: chunked layers keep a
    ``ChunkedLocalAttentionSpec``); the planner passes
    ``disable_hybrid_kv_cache_manager`` when :func:`chunked_attention_uses_hybrid_manager`
    says otherwise, and the pool then allocates those layers as full attention.
    """

    architectures = ("Llama4ForCausalLM",)  # Llama4ForConditionalGeneration: models/llama4_mm.py
    family = "moe"
    modules_on_every_stage = False

    def validate_parallel(self, ctx: GraphContext) -> None:
        cfg = self.config
        _check_heads(cfg.num_attention_heads, cfg.num_key_value_heads, ctx.tensor_parallel_size)

    def _is_moe_layer(self, index: int) -> bool:
        step = _int(self.config.text, "interleave_moe_layer_step", 1)
        return step > 0 and (index + 1) % step == 0

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        text = cfg.text
        span = self.rank_span(ctx)
        h, n = span.hidden, span.layers
        out = windowed_stage_attention(self, ctx, name="self_attn", qkv_bias=bool(text.get("attention_bias", False)),
                                       o_bias=False)
        n_moe = sum(self._is_moe_layer(i) for i in range(span.start, span.end))
        n_dense = n - n_moe
        if n_moe:
            e = _int(text, "num_local_experts")
            local, inter = moe_shard(ctx, e, cfg.intermediate_size)
            out += [
                WeightTensor("feed_forward.router", "router", e, h, n_moe),
                WeightTensor("feed_forward.experts.w13_weight", "expert", 2 * inter, h, n_moe * local, True,
                             in_features_full=h),
                WeightTensor("feed_forward.experts.w2_weight", "expert", h, inter, n_moe * local, True,
                             in_features_full=cfg.intermediate_size),
            ]
            out += self._mlp_tensors(ctx, name="feed_forward.shared_expert",
                                     intermediate=cfg.intermediate_size, count=n_moe)
        if n_dense:
            out += self._mlp_tensors(ctx, name="feed_forward(dense)",
                                     intermediate=_int(text, "intermediate_size_mlp"), count=n_dense)
        if n:
            out.append(WeightTensor("input_layernorm+post_attention_layernorm", "norm", h, 1, 2 * n))
            # each Attention / ChunkedLocalAttention layer's _k/_v/_q/_prob_scale: four fp32 scalars
            out.append(attention_scales("self_attn.attn", n))
            # (use_qk_norm defaults to True: transformers' configuration_llama4.py::Llama4TextConfig)
            if bool(text.get("use_qk_norm", True)):
                # Llama4Attention.qk_norm on RoPE layers (use_qk_norm and not nope): an
                # RMSNorm(head_dim, has_weight=False, dtype=float32), whose torch.ones(head_dim)
                # stays a plain fp32 device tensor (vllm/model_executor/layers/layernorm.py::RMSNorm)
                rope = llama4_no_rope_layers(text)[span.start:span.end]
                if sum(rope):
                    out.append(WeightTensor("self_attn.qk_norm.weight(ones, not a parameter)", "buffer",
                                            cfg.head_dim, 1, sum(rope), dtype="float32"))
            out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer",
                                    _rope_positions(text, cfg.rope_scaling(), cfg.max_position_embeddings),
                                    cfg.head_dim))
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """RoPE layers ``ChunkedLocalAttentionSpec(attention_chunk_size)`` (when the config
        sets a chunk), NoPE layers ``FullAttentionSpec``."""
        cfg = self.config
        chunk = cfg.text.get("attention_chunk_size")
        chunk = int(chunk) if isinstance(chunk, int) and chunk > 0 else None
        rope = llama4_no_rope_layers(cfg.text)
        heads = _kv_heads(cfg.num_key_value_heads, ctx.tensor_parallel_size)
        start, end = self.layer_range(ctx)
        return {
            f"language_model.model.layers.{i}.self_attn.attn": _attention_spec(
                ctx, num_kv_heads=heads, head_size=cfg.head_dim, chunk=chunk if rope[i] else None)
            for i in range(start, end)
        }

    def disables_hybrid_kv_cache_manager(self, ctx: GraphContext, vllm_version: Sequence[int] | None = None) -> bool:
        if not isinstance(self.config.text.get("attention_chunk_size"), int):
            return False
        return not chunked_attention_uses_hybrid_manager(vllm_version, speculative_method=ctx.speculative_method)

    def notes(self) -> tuple[str, ...]:
        rope = llama4_no_rope_layers(self.config.text)
        chunk = self.config.text.get("attention_chunk_size")
        out = [f"{sum(rope)} chunked-local layers (chunk {chunk}) and {len(rope) - sum(rope)} global NoPE layers"]
        return tuple(out)
