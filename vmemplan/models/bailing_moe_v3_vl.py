"""Bailing V3 VL (``BailingMoeV3VLForConditionalGeneration``, Ling 3.0 VL): Qwen3-VL's vision
transformer with a parameter-free patch merger and an MLP projector, in front of the Ling 3.0
decoder (Kimi-delta-attention + gated MLA layers, Bailing MoE).

vllm/model_executor/models/bailing_moe_v3_vl.py (0.33.0), config
vllm/transformers_utils/configs/bailing_moe_v3_vl.py (registered by vLLM: no remote code):

* under ``_mark_tower_model(vllm_config, "image")``:

  - ``BailingMoeV3VisionTransformer``: ``Qwen3_VisionTransformer`` built on a copy of the vision
    config with ``deepstack_visual_indexes = []`` and ``out_hidden_size`` = ``hidden × merge²``,
    whose ``merger`` is then replaced by ``BailingMoeV3VisionPatchMerger`` (a LayerNorm of the
    tower width, weight and bias, and a reshape): the patch embed, position table, blocks and
    rotary cache of :func:`vmemplan.models.vision_towers.qwen3_vl_tower`, no merger linears, no
    deepstack mergers (so no deepstack input-embedding buffers either);
  - ``BailingMoeV3VLProjector`` ``linear_proj``: ColumnParallelLinear(``hidden × merge²`` → text
    hidden, bias), GELU, RowParallelLinear(text hidden → text hidden, bias);

* the language model ``BailingMoeV3ForCausalLM(vllm_config.with_hf_config(text_config))``:
  :class:`vmemplan.models.bailing_linear.BailingMoeV3`, except its MLA rotary embedding:
  ``BailingMoeV3VLConfig`` always writes ``mrope_section`` (default [12, 10, 10]) into the text
  config's ``rope_parameters``, so ``_build_mla_rotary_embedding`` asks get_rope for
  ``bailing_mrope``: a ``BailingMRotaryEmbedding`` (an ``MRotaryEmbedding``) whose cache holds
  ``max_position_embeddings × 4`` rows (the default ``positions_factor``) of ``qk_rope_head_dim``;
* the class declares no ``supports_encoder_tp_data``: ``--mm-encoder-tp-mode data`` runs as
  ``weights`` (the tower split over TP).

Encoder profile: ``BailingMoeV3VLProcessingInfo`` is ``Qwen2VLProcessingInfo`` serving images
only (``get_supported_mm_limits`` / ``get_mm_max_tokens_per_item``).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.bailing_linear import BailingMoeV3
from vmemplan.models.base import register
from vmemplan.models.multimodal import QWEN2_VL_MAX_PIXELS, QWEN2_VL_MIN_PIXELS, VisionEncoderMixin
from vmemplan.models.vision_towers import _enc, _need, _tower_tp, _vision, qwen3_vl_tower, split_mlp_projector

__all__ = ["BailingMoeV3VL", "bailing_v3_vl_tower"]

#: MRotaryEmbedding's default ``positions_factor`` (get_rope's ``mrope_positions_factor``)
_MROPE_FACTOR = 4

#: BailingMoeV3TextConfig's defaults (configs/bailing_moe_v3_vl.py, 0.33.0) for the keys the
#: decoder reads that a checkpoint's text_config may leave out
TEXT_DEFAULTS: dict[str, Any] = {
    "max_position_embeddings": 32768, "num_experts": 256, "num_shared_experts": 1, "num_experts_per_tok": 8,
    "moe_intermediate_size": 512, "moe_shared_expert_intermediate_size": 512, "first_k_dense_replace": 1,
    "use_qk_norm": True, "use_bias": False, "use_qkv_bias": False, "moe_router_enable_expert_bias": True,
    "layer_group_size": 5, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "qk_nope_head_dim": 128, "short_conv_kernel_size": 4, "no_kda_lora": False,
}


def bailing_v3_vl_tower(vc: Any, tp: int, text_hidden: int) -> list[WeightTensor]:
    """The Qwen3 ViT without deepstack, its merger a LayerNorm only, plus the two-layer projector."""
    c = _need(vc, "hidden_size")
    merge = int(vc.get("spatial_merge_size", 2))
    m = c * merge * merge
    vit = qwen3_vl_tower({**vc, "deepstack_visual_indexes": [], "out_hidden_size": m}, tp)
    return [t for t in vit if not t.name.startswith("visual.merger.")] + [
        _enc("merger.norm", c, 1, 2),
        *split_mlp_projector("linear_proj", ("linear_fc1", "linear_fc2"), m, text_hidden, text_hidden, tp),
    ]


@register
class BailingMoeV3VL(VisionEncoderMixin, BailingMoeV3):
    """Ling 3.0 VL: the BailingMoeV3 decoder with Bailing M-RoPE plus the merger-less Qwen3 ViT."""

    architectures = ("BailingMoeV3VLForConditionalGeneration",)
    modalities = ("image",)

    @property
    def patches_per_token(self) -> int:
        merge = int(_vision(self.config).get("spatial_merge_size", 2))
        return merge * merge

    def _get(self, key: str, default: Any = None) -> Any:
        """The text config's value, else BailingMoeV3TextConfig's default (:data:`TEXT_DEFAULTS`)."""
        return super()._get(key, TEXT_DEFAULTS.get(key, default))

    def is_moe_layer(self, i: int) -> bool:
        return i >= int(self._get("first_k_dense_replace"))  # num_experts defaults to 256

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return bailing_v3_vl_tower(_vision(config), _tower_tp(ctx), config.hidden_size)

    def rope_tensors(self, n_linear: int, n_mla: int) -> list[WeightTensor]:
        """The MLA cache as a Bailing M-RoPE one: ``max_position_embeddings × 4`` rows."""
        return [WeightTensor(t.name, t.kind, t.rows * _MROPE_FACTOR, t.cols, t.count, t.quantizable, t.dtype)
                for t in super().rope_tensors(n_linear, n_mla)]

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """The largest image as Qwen2VLProcessingInfo.get_max_image_tokens prices it (the remote
        processor's pixel limits when the config carries them, else Qwen2VLImageProcessor's)."""
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        vc = _vision(config)
        lo = int(vc.get("min_pixels", config.raw.get("min_pixels", QWEN2_VL_MIN_PIXELS)))
        hi = int(vc.get("max_pixels", config.raw.get("max_pixels", QWEN2_VL_MAX_PIXELS)))
        return {"image": mm_law.qwen_vl_max_image_tokens(
            patch_size=_need(vc, "patch_size"), merge_size=int(vc.get("spatial_merge_size", 2)), min_pixels=lo,
            max_pixels=hi, temporal_patch_size=int(vc.get("temporal_patch_size", 2)))}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)
