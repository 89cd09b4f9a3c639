"""ERNIE-4.5-VL (``Ernie4_5_VLMoeForConditionalGeneration``, baidu/ERNIE-4.5-VL-28B-A3B-PT and the
424B-A47B sibling): a DFNRope vision transformer and a variable-resolution resampler in front of an
MoE decoder with separate text and vision experts.

vllm/model_executor/models/ernie45_vl.py and ernie45_vl_moe.py (0.33.0):

* ``Ernie4_5_VLMoeForCausalLM`` / ``Ernie4_5_VLMoeModel``: the vocab-parallel embedding (tied to the
  LM head with ``tie_word_embeddings``), per layer ``Ernie4_5_VLMoeAttention`` (QKVParallelLinear with a
  bias when ``use_bias``, RowParallelLinear ``o_proj`` without one) and two RMSNorms, a final RMSNorm.
  Each attention builds its own ``Ernie4_5_VLRotaryEmbedding`` (an ``MRotaryEmbedding`` made directly,
  not through get_rope's cache), so every layer holds a cos/sin cache of ``max_position_embeddings × 4``
  rows × head_dim at the model dtype (:func:`vmemplan.models.vision_towers.mrope_cache_positions`);
* ``Ernie4_5_VLMoeDecoderLayer``: the layer is ``Ernie4_5_VLMoeMoE`` when ``use_moe`` (default: experts
  > 0), ``(i + 1) % moe_layer_interval == 0`` and ``min(moe_layer_start_index) <= i <=
  max(moe_layer_end_index)``, else an ``Ernie4_5_MoeMLP`` of ``intermediate_size``;
* ``Ernie4_5_VLMoeMoE``: an fp32 ``e_score_correction_bias [2, E]``, shared experts as one MLP of
  ``moe_intermediate_size[0] × moe_num_shared_experts`` (passed to both expert sets: one module), and for
  the text (index 0) and vision (index 1) sides each: inside that side's
  ``[moe_layer_start_index[k], moe_layer_end_index[k]]`` an fp32 ReplicatedLinear gate ``[E, H]`` and a
  fused MoE of ``moe_num_experts[k]`` experts of ``moe_intermediate_size[k]``, outside it a dense MLP of
  ``intermediate_size``;
* ``Ernie4_5_VisionTransformer`` (vision_config): a bias-free Linear patch embedding ``[C, 3·p²]``,
  ``depth`` blocks shaped as Qwen2-VL's (LayerNorm ×2 with biases, qkv / proj / fc1 / fc2 with biases,
  fc1 of ``embed_dim × mlp_ratio``; :func:`vmemplan.models.vision_towers._qwen_vit` without its merger),
  a final LayerNorm ``ln`` and the rotary ``inv_freq`` (fp32, head_dim / 4 entries);
* ``VariableResolutionResamplerModel``: column-parallel (gather_output) spatial_linear1/2
  ``[4P → 4P]`` with biases and a LayerNorm of 4P (P = ``pixel_hidden_size``, 4 = spatial_conv_size²),
  with ``use_temporal_conv`` temporal_linear1 ``[4P·T → 4P]``, temporal_linear2 and a LayerNorm, then
  ``mlp [4P → H]`` with a bias and an RMSNorm ``after_norm`` of H;
* the ``_visual_token_ids_tensor_cache`` buffer: the set ids of ``im_patch_id`` and the image / video
  start / end tokens, int64, outside the tower (built under ``--language-model-only`` too).

No ``supports_encoder_tp_data``: ``--mm-encoder-tp-mode data`` runs as ``weights``.  The encoder
profile is Qwen2-VL's arithmetic (``Ernie4_5_VLProcessingInfo._get_vision_info``: smart_resize to a
multiple of patch × spatial_conv_size, tokens = patches / spatial_conv_size²) with the transformers
``Ernie4_5_VLMoeImageProcessor`` limits (56², 28²·6177) unless the config carries ``min_pixels`` /
``max_pixels``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.ernie45_moe import Ernie45Moe
from vmemplan.models.moe_blocks import gated_mlp_biases, gated_mlp_tensors, router_tensors
from vmemplan.models.multimodal import _QwenVLBase
from vmemplan.models.vision_towers import _MergerViT, _need, _qwen_vit, _tower_tp, _vision, mrope_cache_positions

__all__ = ["Ernie45VL", "ernie45_vl_tower", "ernie45_vl_resampler"]

ERNIE45_VL_MIN_PIXELS = 56 * 56
ERNIE45_VL_MAX_PIXELS = 28 * 28 * 6177  # transformers Ernie4_5_VLMoeImageProcessor size longest_edge


def ernie45_vl_tower(vc: Mapping[str, Any], tp: int) -> list[WeightTensor]:
    """Ernie4_5_VisionTransformer: Qwen2-VL's blocks behind a bias-free Linear patch embedding
    ``[embed_dim, in_channels · patch²]`` (no temporal patch), no merger, a final LayerNorm and the
    fp32 rotary ``inv_freq`` of ``ceil(head_dim / 4)`` entries."""
    c = _need(vc, "embed_dim", "hidden_size")
    heads = _need(vc, "num_heads")
    g = _MergerViT(c, _need(vc, "depth"), heads, int(c * float(vc.get("mlp_ratio", 4))), 0,
                   _need(vc, "patch_size"), 1, int(vc.get("spatial_merge_size", 2)))
    blocks = [t for t in _qwen_vit(g, vc, tp, gated=False, norm_biases=True)
              if not t.name.startswith(("visual.merger", "visual.rotary_pos_emb"))]
    return blocks + [
        WeightTensor("visual.ln (weight, bias)", "encoder", c, 1, 2),
        WeightTensor("visual.rotary_pos_emb.inv_freq", "buffer", (c // heads // 2 + 1) // 2, 1, dtype="float32"),
    ]


def ernie45_vl_resampler(raw: Mapping[str, Any], hidden: int, tp: int) -> list[WeightTensor]:
    """VariableResolutionResamplerModel's column-parallel linears (weights and biases split over
    ``tp``), its LayerNorms (weight + bias) and the RMSNorm ``after_norm``."""
    s = int(raw.get("pixel_hidden_size", 1280)) * int(raw.get("spatial_conv_size", 2)) ** 2
    temporal = s * int(raw.get("temporal_conv_size", 2))

    def col(name: str, out: int, inp: int) -> list[WeightTensor]:
        return [WeightTensor(f"resampler_model.{name}", "encoder", out // tp, inp),
                WeightTensor(f"resampler_model.{name}.bias", "encoder", out // tp, 1)]

    out = col("spatial_linear1", s, s) + col("spatial_linear2", s, s)
    out.append(WeightTensor("resampler_model.spatial_norm (weight, bias)", "encoder", s, 1, 2))
    if raw.get("use_temporal_conv", True):
        out += col("temporal_linear1", s, temporal) + col("temporal_linear2", s, s)
        out.append(WeightTensor("resampler_model.temporal_norm (weight, bias)", "encoder", s, 1, 2))
    return out + col("mlp", hidden, s) + [WeightTensor("resampler_model.after_norm", "encoder", hidden, 1)]


def _pair(text: Mapping[str, Any], key: str, default: int) -> tuple[int, int]:
    """A (text, vision) pair from a list-valued key (a scalar serves both)."""
    v = text.get(key)
    if isinstance(v, (list, tuple)) and v:
        return int(v[0]), int(v[-1])
    return (int(v), int(v)) if isinstance(v, int) and not isinstance(v, bool) else (default, default)


@register
class Ernie45VL(_QwenVLBase, Ernie45Moe):
    """ERNIE-4.5-VL: the text / vision-expert MoE decoder plus the DFNRope tower and resampler."""

    architectures = ("Ernie4_5_VLMoeForConditionalGeneration",)
    supports_encoder_tp_data = False

    # -- config facts (list-valued: [text, vision]) ---------------------------------------
    def num_experts(self) -> int:
        return _pair(self.config.text, "moe_num_experts", 0)[0]

    def expert_intermediate(self) -> int:
        return _pair(self.config.text, "moe_intermediate_size", self.config.intermediate_size)[0]

    def _ranges(self) -> tuple[tuple[int, int], tuple[int, int]]:
        last = self.config.num_hidden_layers - 1
        starts = _pair(self.config.text, "moe_layer_start_index", 0)
        ends = _pair(self.config.text, "moe_layer_end_index", last)
        return (starts[0], ends[0]), (starts[1], ends[1])

    def is_moe_layer(self, index: int) -> bool:
        text = self.config.text
        (ts, te), (vs, ve) = self._ranges()
        interval = int(text.get("moe_layer_interval", 1) or 1)
        use_moe = text.get("use_moe", max(_pair(text, "moe_num_experts", 0)) > 0)
        return bool(use_moe) and (index + 1) % interval == 0 and min(ts, vs) <= index <= max(te, ve)

    # -- tensors -----------------------------------------------------------------------
    def moe_block_tensors(self, ctx: GraphContext, m: int) -> list[WeightTensor]:
        """Ernie4_5_VLMoeMoE on the stage's MoE layers: correction bias, shared experts, and per side
        the gate + fused experts inside its range, a dense MLP outside it."""
        if m == 0:
            return []
        h, tp, text = self.config.hidden_size, ctx.tensor_parallel_size, self.config.text
        start, end = self.layer_range(ctx)
        moe = [i for i in range(start, end) if self.is_moe_layer(i)]
        experts, inters = _pair(text, "moe_num_experts", 0), _pair(text, "moe_intermediate_size", 0)
        p = self.placement(ctx)
        out = [WeightTensor("mlp.e_score_correction_bias", "router", 2, experts[0], m, dtype="float32")]
        out += gated_mlp_tensors("mlp.shared_experts", inters[0] * int(text.get("moe_num_shared_experts", 0)),
                                 h, m, tp)
        dense = 0
        for side, (lo, hi) in zip(("text", "vision"), self._ranges()):
            k = 0 if side == "text" else 1
            n = sum(1 for i in moe if lo <= i <= hi)
            dense += m - n
            if n:
                out += router_tensors(f"mlp.{side}_experts_gate", experts[k], h, n, dtype="float32")
                out += self._expert_tensors(p, p.local_logical, n, f"mlp.{side}_experts", inter_full=inters[k])
        di = self.dense_intermediate()
        out += gated_mlp_tensors("mlp.side_mlp", di, h, dense, tp)
        if self.mlp_bias():
            out += gated_mlp_biases("mlp.side_mlp", di, h, dense, tp)
        return out

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        n = self.rank_span(ctx).layers
        positions, dim = mrope_cache_positions(cfg, 4)
        out = [t for t in super().weight_tensors(ctx) if t.name != "rotary_emb.cos_sin_cache"]
        if n:  # one Ernie4_5_VLRotaryEmbedding per attention layer
            out.append(WeightTensor("self_attn.rotary_emb.cos_sin_cache", "buffer", positions, dim, n))
        ids = [k for k in ("im_patch_id", "image_start_token_id", "image_end_token_id", "video_start_token_id",
                           "video_end_token_id") if cfg.raw.get(k) is not None]
        if cfg.raw.get("im_patch_id"):
            out.append(WeightTensor("_visual_token_ids_tensor_cache", "buffer", len(ids), 1, dtype="int64"))
        return out + self.tower_tensors(cfg, ctx)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        tp = _tower_tp(ctx)
        return ernie45_vl_tower(_vision(config), tp) + ernie45_vl_resampler(config.raw, config.hidden_size, tp)

    # -- encoder profile ---------------------------------------------------------------
    def pixel_limits(self, config: Any) -> tuple[int, int]:
        lo = config.raw.get("min_pixels", _vision(config).get("min_pixels", ERNIE45_VL_MIN_PIXELS))
        hi = config.raw.get("max_pixels", _vision(config).get("max_pixels", ERNIE45_VL_MAX_PIXELS))
        return int(lo), int(hi)

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        vc = _vision(config)
        c = _need(vc, "embed_dim", "hidden_size")
        return c, int(c * float(vc.get("mlp_ratio", 4)))

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        vc = dict(_vision(config))
        vc["temporal_patch_size"] = int(config.raw.get("temporal_conv_size", 2))
        vc["spatial_merge_size"] = int(config.raw.get("spatial_conv_size", vc.get("spatial_merge_size", 2)))
        return super().max_tokens_per_item(_WithVision(config, vc), ctx)

    def notes(self) -> tuple[str, ...]:
        lo, hi = self.pixel_limits(self.config)
        return (f"image pixel limits {lo}..{hi} (transformers Ernie4_5_VLMoeImageProcessor defaults unless the "
                "config states them); the checkpoint's preprocessor_config.json may allow larger images",)


class _WithVision:
    """``config`` seen with another ``vision_config`` (the resampler's conv sizes as the Qwen-VL keys)."""

    def __init__(self, config: Any, vc: Mapping[str, Any]) -> None:
        self._config, self.raw = config, {**config.raw, "vision_config": vc}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._config, name)
