"""OpenVLA (``OpenVLAForActionPrediction``, openvla/openvla-7b): Prismatic's fused DINOv2 + SigLIP
vision backbone and a three-layer projector in front of the Llama-2 decoder of ``text_config``.

vllm/model_executor/models/openvla.py::OpenVLAForActionPrediction.__init__ (0.33.0), under
``_mark_tower_model(vllm_config, "image")``:

* ``vision_backbone`` = PrismaticVisionBackbone: two timm models built with ``num_classes=0`` and
  ``img_size=224`` (the only supported ids and size; plain timm layers, whole on every rank):

  - ``dinov2_featurizer`` = ``vit_large_patch14_reg4_dinov2.lvd142m`` (:func:`dinov2_reg4_timm_tower`):
    Conv2d patch embed with bias, ``cls_token``, four ``reg_token``, a position table of the
    (224/14)² = 256 patches only, 24 blocks [LayerNorm ×2, qkv and proj with bias, Mlp fc1/fc2
    with bias, LayerScale ``ls1`` / ``ls2``], the final LayerNorm, no head;
  - ``siglip_featurizer`` = ``vit_so400m_patch14_siglip_224``: DeepSeek-VL2's SigLIP-SO400M layout
    at 224 px (:func:`vmemplan.models.deepseek_vl2.siglip_so400m_timm_tower` with TP 1: the MAP
    attention-pool head is built, 256 positions);

* ``projector`` = PrismaticProjector (fused backbone, width 1024 + 1152 = 2176): ``fc1``
  ColumnParallelLinear(2176 → 4·2176), ``fc2`` RowParallelLinear(→ text hidden), ``fc3``
  ReplicatedLinear(text hidden → text hidden), all with bias;

then ``init_vllm_registered_model(hf_config=text_config)``: vLLM's OpenVLAConfig makes the text
config a transformers ``LlamaConfig`` (LlamaForCausalLM; omitted keys at LlamaConfig's defaults).
No ``supports_encoder_tp_data``.  One image a prompt (``get_supported_mm_limits``) of
``(224 / 14)²`` = 256 tokens (``get_mm_max_tokens_per_item``).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import Adapter, register
from vmemplan.models.deepseek_vl2 import SO400M, siglip_so400m_timm_tower
from vmemplan.models.internvl import language_model_new
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _split

__all__ = ["OpenVLA", "dinov2_reg4_timm_tower", "prismatic_projector"]

#: timm vit_large_patch14_reg4_dinov2: width, blocks, MLP width, patch, register tokens
DINOV2_L = {"width": 1024, "layers": 24, "mlp": 4096, "patch": 14, "registers": 4}
#: openvla.py::_OPENVLA_IMAGE_SIZE
IMAGE = 224


def dinov2_reg4_timm_tower(prefix: str, image: int = IMAGE) -> list[WeightTensor]:
    """timm ViT-L/14 DINOv2 with four registers, ``num_classes=0`` (module docstring): replicated."""
    c, n, m, p = (DINOV2_L[k] for k in ("width", "layers", "mlp", "patch"))

    def t(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols, count)

    return [
        t("patch_embed.proj", c, 3 * p * p), t("patch_embed.proj.bias", c),
        t("cls_token", c), t("reg_token", DINOV2_L["registers"], c),
        t("pos_embed", (image // p) ** 2, c),
        t("blocks.norm1+norm2", c, 1, 4 * n),
        t("blocks.attn.qkv", 3 * c, c, n), t("blocks.attn.qkv.bias", 3 * c, 1, n),
        t("blocks.attn.proj", c, c, n), t("blocks.attn.proj.bias", c, 1, n),
        t("blocks.mlp.fc1", m, c, n), t("blocks.mlp.fc1.bias", m, 1, n),
        t("blocks.mlp.fc2", c, m, n), t("blocks.mlp.fc2.bias", c, 1, n),
        t("blocks.ls1+ls2.gamma", c, 1, 2 * n),
        t("norm", c, 1, 2),
    ]


def prismatic_projector(vision_dim: int, text_dim: int, tp: int) -> list[WeightTensor]:
    """openvla.py::PrismaticProjector for the fused backbone: fc1 column-, fc2 row-parallel, fc3
    replicated, all with bias (a row-parallel bias is whole on every rank)."""
    inter = _split(4 * vision_dim, tp, "projector width")

    def t(name: str, rows: int, cols: int = 1) -> WeightTensor:
        return WeightTensor(f"projector.{name}", "encoder", rows, cols)

    return [t("fc1", inter, vision_dim), t("fc1.bias", inter),
            t("fc2", text_dim, inter), t("fc2.bias", text_dim),
            t("fc3", text_dim, text_dim), t("fc3.bias", text_dim)]


class _OpenVLATower(VisionEncoderMixin):
    """The tower half; combined with the ``text_config`` Llama by ``internvl.language_model_new``."""

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        siglip = siglip_so400m_timm_tower(1, image=IMAGE, prefix="vision_backbone.siglip_featurizer")
        fused = DINOV2_L["width"] + SO400M["width"]
        return [*dinov2_reg4_timm_tower("vision_backbone.dinov2_featurizer"), *siglip,
                *prismatic_projector(fused, config.hidden_size, ctx.tensor_parallel_size)]

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        return SO400M["width"], SO400M["mlp"]

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        return {"image": (IMAGE // DINOV2_L["patch"]) ** 2}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)  # type: ignore[misc]


@register
class OpenVLA(_OpenVLATower, Adapter):
    """``OpenVLAForActionPrediction``: DINOv2 + SigLIP (timm) + the Prismatic projector + Llama-2."""

    architectures = ("OpenVLAForActionPrediction",)

    __new__ = language_model_new(_OpenVLATower)
