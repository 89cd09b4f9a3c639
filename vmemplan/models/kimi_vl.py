"""Kimi-VL (``KimiVLForConditionalGeneration``, e.g. moonshotai/Kimi-VL-A3B-Instruct / -Thinking): the
DeepSeek-V3-style MLA + MoE decoder of :mod:`vmemplan.models.deepseek` plus the MoonViT encoder and
Kimi-VL's projector.

vllm/model_executor/models/kimi_vl.py (0.33.0): ``KimiVLForConditionalGeneration.__init__`` builds
``vision_tower = MoonVitPretrainedModel`` and ``multi_modal_projector = KimiVLMultiModalProjector``
unless images are limited to 0 per prompt (``_mark_tower_model``), and the language model from
``text_config`` as ``DeepseekV2ForCausalLM``.

* MoonViT (vllm/model_executor/models/moonvit.py): Conv2d patch embed (bias), a learned
  ``init_pos_emb_height × init_pos_emb_width × c`` position table (``Learnable2DInterpPosEmb``),
  ``num_hidden_layers`` blocks of [LayerNorm ×2, wqkv and wo with bias, MLP2 fc0/fc1 with bias],
  a final LayerNorm; the 2-D rotary table is a ``cached_property`` computed on first use (no
  tensor at load).  Linears shard over TP unless ``--mm-encoder-tp-mode data``.
* The projector: LayerNorm(c), then ``ReplicatedLinear`` (c·k² → c·k², bias) and (c·k² → text
  hidden, bias), k² the merge kernel: whole on every rank.
* Tokens per image: ``KimiVLProcessingInfo.get_num_image_tokens`` of the 1024 × 1024 dummy image
  (``MaxImageTokenMeta``): patches above the processor's ``in_token_limit`` scale the image down,
  then sides are padded to ``kernel × patch`` and counted per kernel.
"""

from __future__ import annotations

import math
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.deepseek import DeepseekMLA
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _need, _split, _tower_tp, _vision

__all__ = ["KimiVL", "moonvit_tower", "kimi_vl_image_tokens"]

#: kimi_vl.py::MaxImageTokenMeta, the dummy image the encoder budget is sized with
KIMI_VL_DUMMY_IMAGE = (1024, 1024)
#: Kimi-VL's image processor (remote code, preprocessor_config.json ``in_token_limit``)
KIMI_VL_IN_TOKEN_LIMIT = 4096


def _kernel(vc: Any) -> tuple[int, int]:
    k = vc.get("merge_kernel_size") or [2, 2]
    return int(k[0]), int(k[1])


def kimi_vl_image_tokens(width: int, height: int, *, patch_size: int, kernel: tuple[int, int],
                         in_token_limit: int = KIMI_VL_IN_TOKEN_LIMIT) -> int:
    """kimi_vl.py::KimiVLProcessingInfo.get_num_image_tokens (0.33.0)."""
    if (width // patch_size) * (height // patch_size) > in_token_limit:
        scale = math.sqrt(in_token_limit / ((width // patch_size) * (height // patch_size)))
        width, height = int(width * scale), int(height * scale)
    kh, kw = kernel
    pad_h = (kh * patch_size - height % (kh * patch_size)) % (kh * patch_size)
    pad_w = (kw * patch_size - width % (kw * patch_size)) % (kw * patch_size)
    return ((height + pad_h) // (kh * patch_size)) * ((width + pad_w) // (kw * patch_size))


def moonvit_tower(vc: Any, tp: int, text_hidden: int) -> list[WeightTensor]:
    """MoonVitPretrainedModel plus KimiVLMultiModalProjector on one rank (0.33.0)."""
    c = _need(vc, "hidden_size")
    layers = _need(vc, "num_hidden_layers")
    heads = _need(vc, "num_attention_heads")
    inter = _need(vc, "intermediate_size")
    patch = _need(vc, "patch_size")
    ph, pw = _need(vc, "init_pos_emb_height"), _need(vc, "init_pos_emb_width")
    kh, kw = _kernel(vc)
    _split(heads, tp, "attention heads")
    q = _split(c, tp, "width")
    i = _split(inter, tp, "MLP width")
    m = c * kh * kw

    def t(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
        return WeightTensor(f"vision_tower.{name}", "encoder", rows, cols, count)

    def p(name: str, rows: int, cols: int = 1) -> WeightTensor:
        return WeightTensor(f"multi_modal_projector.{name}", "encoder", rows, cols)

    return [
        t("patch_embed.proj", c, 3 * patch * patch), t("patch_embed.proj.bias", c),
        t("patch_embed.pos_emb", ph * pw, c),
        t("encoder.blocks.norm0+norm1", c, 1, 4 * layers),  # LayerNorm weight + bias, twice
        t("encoder.blocks.wqkv", 3 * q, c, layers), t("encoder.blocks.wqkv.bias", 3 * q, 1, layers),
        t("encoder.blocks.wo", c, q, layers), t("encoder.blocks.wo.bias", c, 1, layers),
        t("encoder.blocks.mlp.fc0", i, c, layers), t("encoder.blocks.mlp.fc0.bias", i, 1, layers),
        t("encoder.blocks.mlp.fc1", c, i, layers), t("encoder.blocks.mlp.fc1.bias", c, 1, layers),
        t("encoder.final_layernorm", c, 1, 2),
        p("pre_norm", c, 2),
        p("linear_1", m, m), p("linear_1.bias", m),
        p("linear_2", text_hidden, m), p("linear_2.bias", text_hidden),
    ]


@register
class KimiVL(VisionEncoderMixin, DeepseekMLA):
    """Kimi-VL: the DeepSeek MLA/MoE decoder plus MoonViT and the replicated projector."""

    supports_encoder_tp_data = True  # declared by vLLM's model class (0.33.0)

    architectures = ("KimiVLForConditionalGeneration",)
    modalities = ("image",)

    @property
    def patches_per_token(self) -> int:  # type: ignore[override]
        kh, kw = _kernel(_vision(self.config))
        return kh * kw

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return moonvit_tower(_vision(config), _tower_tp(ctx), config.hidden_size)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        vc = _vision(config)
        limit = int(vc.get("in_token_limit", config.raw.get("in_token_limit", KIMI_VL_IN_TOKEN_LIMIT)))
        w, h = KIMI_VL_DUMMY_IMAGE
        return {"image": kimi_vl_image_tokens(w, h, patch_size=_need(vc, "patch_size"), kernel=_kernel(vc),
                                              in_token_limit=limit)}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)

    def notes(self) -> tuple[str, ...]:
        return ("image tokens from the processor's in_token_limit (4096 unless the config names it; "
                "preprocessor_config.json carries it)",)
