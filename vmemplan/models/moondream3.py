"""Moondream 3 (``HfMoondream`` / ``Moondream3ForCausalLM``, moondream/moondream3-preview): a SigLIP-shaped
ViT and a two-layer projector in front of Moondream's own decoder, four dense layers then expert MoE layers.

vllm/model_executor/models/moondream3.py (0.33.0); the config is
vllm/transformers_utils/configs/moondream3.py::Moondream3Config (its sizes nested under ``config.text`` /
``config.vision``; :func:`vmemplan.model_config.moondream3_flat` reads them with the same defaults):

* ``Moondream3TextModel`` (``text``): ``wte`` VocabParallelEmbedding, ``n_layers`` ×
  ``Moondream3DecoderLayer`` and ``post_ln`` nn.LayerNorm — the embedding and the final norm are built on
  every pipeline stage (the class does not test the stage), as is the biased ``lm_head`` ParallelLMHead
  (untied);
* per layer: one nn.LayerNorm ``ln`` (attention and MLP run in parallel on it); ``Moondream3Attention``:
  ``qkv_proj`` QKVParallelLinear and ``out_proj`` RowParallelLinear, both biased, head_dim = dim / n_heads,
  KV heads ``max(1, n_kv_heads // tp)``, and the tau parameters ``tau_alpha [heads/tp]``,
  ``tau_wq`` / ``tau_wv [heads/tp, 3·dim]`` (only the heads are split); a rotary cache over
  ``max_context`` positions with 32 rotary dims (``partial_rotary_factor`` 32 / head_dim);
* layers below ``moe_start_layer``: ``Moondream3TextMLP`` (``fc1`` ColumnParallelLinear, ``fc2``
  RowParallelLinear, biased, ``ff_dim`` wide); from it on ``Moondream3TextMoE``, expert-parallel over the
  TP group: ``gate`` GateLinear(dim → n_experts, biased, replicated), bare parameters ``fc1_weight
  [n_experts // tp, 2·expert_inner_dim, dim]`` and ``fc2_weight [n_experts // tp, dim, expert_inner_dim]``
  (whole experts, never quantized), and two non-persistent buffers: ``_expert_map`` int32
  ``[n_experts]`` and ``_fused_w1_bias`` fp32 ``[n_experts // tp, 2·expert_inner_dim]``;
* under ``_mark_tower_model(vllm_config, "image")``: ``Moondream3VisionEncoder`` (``vision``): ``patch_emb``
  nn.Linear(3·p² → enc_dim, biased), ``pos_emb [1, (crop/p)², enc_dim]``, ``enc_n_layers`` blocks with two
  LayerNorms, biased QKVParallelLinear / RowParallelLinear attention and ColumnParallel / RowParallel
  ``fc1`` / ``fc2`` MLP, and ``post_ln`` — the shapes of a SigLIP tower without its pre-norm
  (:func:`vmemplan.models.vision_towers._clip_like`); ``Moondream3VisionProjection`` (``vision_proj``):
  ``fc1`` ColumnParallelLinear(2·enc_dim → proj_inner_dim) and ``fc2`` RowParallelLinear(→ dim), biased.
  The model does not declare ``supports_encoder_tp_data``.

Image tokens per item: ``Moondream3ProcessingInfo.get_num_image_tokens`` is a fixed 730 (the BOS and the
27 × 27 grid); the processor supports one image per prompt.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor, attention_scales
from vmemplan.core.kv_specs import FullAttentionSpec
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import Adapter, register
from vmemplan.models.dense_blocks import kv_spec_fields
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _clip_like, _split, _tower_tp, _vision

__all__ = ["Moondream3", "moondream3_vision"]

#: Moondream3ProcessingInfo.get_max_image_tokens: 1 BOS + 27 × 27 image embeddings
IMAGE_TOKENS = 730
#: Moondream3Attention: rotary dims (``partial_rotary_factor`` = 32 / head_dim)
ROTARY_DIM = 32


def moondream3_vision(vc: Any, text_hidden: int, tp: int) -> list[WeightTensor]:
    """Moondream3VisionEncoder and Moondream3VisionProjection on one rank (see the module docstring)."""
    width, inner = int(vc["hidden_size"]), int(vc["proj_inner_dim"])
    tower = _clip_like(vc, tp, int(vc["num_hidden_layers"]), class_token=False, pre_norm=False, post_norm=True,
                       prefix="vision")
    rows = _split(inner, tp, "projector width")
    return tower + [
        WeightTensor("vision_proj.fc1", "encoder", rows, 2 * width),
        WeightTensor("vision_proj.fc1.bias", "encoder", rows, 1),
        WeightTensor("vision_proj.fc2", "encoder", text_hidden, rows),
        WeightTensor("vision_proj.fc2.bias", "encoder", text_hidden, 1),
    ]


@register
class Moondream3(VisionEncoderMixin, Adapter):
    """Moondream 3: its parallel-block decoder (dense then expert-parallel MoE layers) + ViT and projector."""

    architectures = ("Moondream3ForCausalLM", "HfMoondream")
    family = "moe"

    def _moe(self) -> tuple[int, int, int]:
        """(first MoE layer, experts, expert inner width) of ``text_config``."""
        t = self.config.text
        return int(t["moe_start_layer"]), int(t["moe_num_experts"]), int(t["moe_expert_inner_dim"])

    def _attention(self, tp: int, n: int) -> list[WeightTensor]:
        """Moondream3Attention of ``n`` layers: fused qkv and out projections with biases, tau parameters."""
        cfg = self.config
        h, hd = cfg.hidden_size, cfg.head_dim
        heads = cfg.num_attention_heads // tp
        qkv = (heads + 2 * max(1, cfg.num_key_value_heads // tp)) * hd
        return [
            WeightTensor("attn.qkv_proj", "linear", qkv, h, n, True, in_features_full=h),
            WeightTensor("attn.qkv_proj.bias", "bias", qkv, 1, n),
            WeightTensor("attn.out_proj", "linear", h, heads * hd, n, True, in_features_full=h),
            WeightTensor("attn.out_proj.bias", "bias", h, 1, n),
            WeightTensor("attn.tau_alpha", "norm", heads, 1, n),
            WeightTensor("attn.tau_wq+tau_wv", "linear", heads, 3 * h, 2 * n),
            attention_scales("attn.attn", n),
        ]

    def _mlps(self, tp: int, dense: int, moe: int) -> list[WeightTensor]:
        """``dense`` Moondream3TextMLP and ``moe`` Moondream3TextMoE layers on one rank."""
        cfg = self.config
        h, inter = cfg.hidden_size, cfg.intermediate_size // tp
        _start, experts, inner = self._moe()
        local = experts // tp
        out = []
        if dense:
            out += [WeightTensor("mlp.fc1", "linear", inter, h, dense, True, in_features_full=h),
                    WeightTensor("mlp.fc1.bias", "bias", inter, 1, dense),
                    WeightTensor("mlp.fc2", "linear", h, inter, dense, True, in_features_full=cfg.intermediate_size),
                    WeightTensor("mlp.fc2.bias", "bias", h, 1, dense)]
        if moe:
            out += [WeightTensor("mlp.gate", "router", experts, h, moe),
                    WeightTensor("mlp.gate.bias", "router", experts, 1, moe),
                    WeightTensor("mlp.fc1_weight", "expert", 2 * inner, h, local * moe, allocations=moe),
                    WeightTensor("mlp.fc2_weight", "expert", h, inner, local * moe, allocations=moe),
                    WeightTensor("mlp._expert_map", "buffer", experts, 1, moe, dtype="int32"),
                    WeightTensor("mlp._fused_w1_bias", "buffer", local, 2 * inner, moe, dtype="float32")]
        return out

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg, span = self.config, self.rank_span(ctx)
        h, n = span.hidden, span.layers
        first_moe = self._moe()[0]
        dense = max(0, min(span.end, first_moe) - span.start)
        out = [WeightTensor("text.wte", "embedding", span.vocab_rows, h),
               WeightTensor("text.post_ln", "norm", h, 1), WeightTensor("text.post_ln.bias", "norm", h, 1),
               WeightTensor("lm_head", "lm_head", span.vocab_rows, h),
               WeightTensor("lm_head.bias", "bias", span.vocab_rows, 1)]
        if n:
            out += [WeightTensor("ln", "norm", h, 1, 2 * n)] + self._attention(span.tp, n)
            out += self._mlps(span.tp, dense, n - dense)
            out.append(WeightTensor("rotary_emb.cos_sin_cache", "buffer", cfg.max_position_embeddings, ROTARY_DIM))
        return out + self.tower_tensors(cfg, ctx)

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """One full-attention spec per layer of the stage (Attention.get_kv_cache_spec)."""
        cfg = self.config
        spec = FullAttentionSpec(**kv_spec_fields(
            ctx, num_kv_heads=max(1, cfg.num_key_value_heads // ctx.tensor_parallel_size), head_size=cfg.head_dim))
        start, end = self.layer_range(ctx)
        return {f"text.blocks.{i}.attn.attn": spec for i in range(start, end)}

    # -- the vision tower ----------------------------------------------------------------
    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return moondream3_vision(_vision(config), config.hidden_size, _tower_tp(ctx))

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        return {"image": IMAGE_TOKENS}
