"""gpt-oss (``GptOssForCausalLM``): window on even layers, attention sinks, biased projections,
MoE experts (mxfp4 in the checkpoint; priced by the quantization scheme).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.models.base import register
from vmemplan.models.moe_blocks import windowed_stage_attention
from vmemplan.models.windowed import (
    _attention_spec,
    _check_heads,
    _int,
    _kv_heads,
    _rope_positions,
    _window,
    _WindowedBase,
    moe_shard,
)

__all__ = ["GptOss"]


@register
class GptOss(_WindowedBase):
    """gpt-oss (vllm/model_executor/models/gpt_oss.py, 0.33.0).

    Attention: biased ``qkv_proj`` / ``o_proj``, per-head ``sinks`` (``num_heads // tp``),
    window ``sliding_window`` on even layers (``layer_idx % 2 == 0``; the config's
    ``layer_types`` is not read), one fp32 YaRN rotary cache of
    ``original_max_position_embeddings × factor`` rows, and the ``Attention`` layer's four fp32
    scale scalars (``_k/_v/_q/_prob_scale``, layers/attention/attention.py::
    set_default_quant_scales; ``Mxfp4Config`` gives the attention no KV-cache method).  MLP block: a replicated biased
    router ``[E, H]`` and ``E`` experts with biases (``w13`` ``[2I, H]``, ``w2`` ``[H, I]``),
    stored mxfp4 in the checkpoint: the expert weights are ``kind="expert"`` and
    quantizable, everything else stays at the model dtype (the config's
    ``modules_to_not_convert``).  Untied LM head.
    """

    architectures = ("GptOssForCausalLM",)
    family = "moe"

    def validate_parallel(self, ctx: GraphContext) -> None:
        cfg = self.config
        _check_heads(cfg.num_attention_heads, cfg.num_key_value_heads, ctx.tensor_parallel_size)

    def _num_experts(self) -> int:
        return _int(self.config.text, "num_local_experts")

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        span = self.rank_span(ctx)
        h, tp, n = span.hidden, span.tp, span.layers
        out = windowed_stage_attention(self, ctx, name="attn", qkv_bias=True, o_bias=True)
        if n:
            e = self._num_experts()
            local, inter = moe_shard(ctx, e, cfg.intermediate_size)
            out += [
                WeightTensor("attn.sinks", "norm", cfg.num_attention_heads // tp, 1, n),
                attention_scales("attn.attn", n),
                WeightTensor("input_layernorm+post_attention_layernorm", "norm", h, 1, 2 * n),
                WeightTensor("mlp.router", "router", e, h, n),
                WeightTensor("mlp.router.bias", "bias", e, 1, n),
                WeightTensor("mlp.experts.w13_weight", "expert", 2 * inter, h, n * local, True,
                             in_features_full=h),
                WeightTensor("mlp.experts.w2_weight", "expert", h, inter, n * local, True,
                             in_features_full=cfg.intermediate_size),
                # expert biases follow the MXFP4 backend's padding and dtype (the scheme prices
                # them: float32 on Triton), so they are expert tensors the scheme applies to
                WeightTensor("mlp.experts.w13_bias", "expert", 2 * inter, 1, n * local, True),
                WeightTensor("mlp.experts.w2_bias", "expert", h, 1, n * local, True),
                WeightTensor("rotary_emb.cos_sin_cache", "buffer",
                             _rope_positions(cfg.text, cfg.rope_scaling(), cfg.max_position_embeddings),
                             cfg.head_dim, dtype="float32"),
            ]
        return out

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """Even layers ``SlidingWindowSpec(sliding_window)``, odd layers full attention."""
        cfg = self.config
        window = _window(cfg.text)
        heads = _kv_heads(cfg.num_key_value_heads, ctx.tensor_parallel_size)
        start, end = self.layer_range(ctx)
        return {
            f"model.layers.{i}.attn.attn": _attention_spec(
                ctx, num_kv_heads=heads, head_size=cfg.head_dim, window=window if i % 2 == 0 else None)
            for i in range(start, end)
        }

    def notes(self) -> tuple[str, ...]:
        n = self.config.num_hidden_layers
        return (f"{(n + 1) // 2} of {n} layers use a {_window(self.config.text)}-token sliding window "
                "with attention sinks",)
