"""MiniCPM-V 4.6 / 4.7 and MiniCPM-OCR (``MiniCPMV4_6ForConditionalGeneration``,
``MiniCPMV4_7ForConditionalGeneration``, ``MiniCPMOcrForConditionalGeneration``): an Idefics2
(SigLIP-shaped) vision tower, a window-attention ``vit_merger`` and a downsampling MLP ``merger``
in front of the Qwen3.5 gated-delta hybrid language model (:class:`vmemplan.models.hybrid_qwen.Qwen3_5`).

vllm/model_executor/models/minicpmv4_6.py::MiniCPMV4_6ForConditionalGeneration.__init__ (0.33.0)
builds, inside ``_mark_tower_model(vllm_config, {"image"})`` (dropped when images are limited to 0
per prompt):

* ``vpm`` = idefics2_vision_model.py::Idefics2VisionTransformer(vision_config) -- conv patch embed
  with bias, ``(image_size / patch)²`` positions, biased qkv/out/fc1/fc2 split over TP unless
  ``--mm-encoder-tp-mode data``, two LayerNorms a layer, post-LayerNorm -- with its last layer
  removed when ``_drop_vision_last_layer()`` (4.6: ``config.drop_vision_last_layer``; 4.7
  (minicpmv4_7.py) and OCR (minicpm_ocr.py) override it to False);
* ``vit_merger`` = MiniCPMV4_6ViTWindowAttentionMerger: a QKVParallelLinear(e, e / heads, heads)
  with bias and a RowParallelLinear(e, e) with bias (TP-split like the tower), ``layer_norm1`` (e),
  then replicated ``pre_norm`` LayerNorm(4e), ``linear_1`` nn.Linear(4e, 4·intermediate) and
  ``linear_2`` nn.Linear(4·intermediate, e), all biased;
* ``merger`` = MiniCPMV4_6Merger(times=1): one MiniCPMV4_6DownsampleMLP -- LayerNorm(4e),
  nn.Linear(4e, 4e), nn.Linear(4e, text hidden), biased, replicated.

The recurrent state dtype ignores the text config's ``mamba_ssm_dtype`` (see
:meth:`MiniCPMV4_6.state_dtype_pair`).  The language model is vllm/model_executor/models/qwen3_5.py::Qwen3_5ForCausalLM over
``text_config`` (prefix ``language_model``; the checkpoint's ``mtp.`` weights are skipped).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.hybrid_qwen import Qwen3_5, _GatedDeltaHybrid
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _need, _split, _vision, siglip_tower

__all__ = ["MiniCPMV4_6", "minicpmv4_6_tower"]


def minicpmv4_6_tower(vc: dict, text_hidden: int, tp: int, drop_last: bool) -> list[WeightTensor]:
    """``vpm`` + ``vit_merger`` + ``merger`` of minicpmv4_6.py (0.33.0), per rank at tower TP ``tp``."""
    e = _need(vc, "hidden_size")
    heads = _need(vc, "num_attention_heads")
    inter = _need(vc, "intermediate_size")
    layers = _need(vc, "num_hidden_layers") - (1 if drop_last else 0)
    tower = [WeightTensor(t.name.replace("vision_tower.vision_model.", "vpm."), t.kind, t.rows, t.cols, t.count)
             for t in siglip_tower({"num_channels": 3, **vc}, tp, layers, post_norm=True)]
    _split(heads, tp, "attention heads")
    q = _split(e, tp, "width")

    def t(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
        return WeightTensor(name, "encoder", rows, cols, count)

    e4, i4 = 4 * e, 4 * inter
    return tower + [
        t("vit_merger.self_attn.qkv_proj", 3 * q, e), t("vit_merger.self_attn.qkv_proj.bias", 3 * q),
        t("vit_merger.self_attn.out_proj", e, q), t("vit_merger.self_attn.out_proj.bias", e),
        t("vit_merger.layer_norm1", e, 1, 2),
        t("vit_merger.pre_norm", e4, 1, 2),
        t("vit_merger.linear_1", i4, e4), t("vit_merger.linear_1.bias", i4),
        t("vit_merger.linear_2", e, i4), t("vit_merger.linear_2.bias", e),
        t("merger.mlp.0.pre_norm", e4, 1, 2),
        t("merger.mlp.0.linear_1", e4, e4), t("merger.mlp.0.linear_1.bias", e4),
        t("merger.mlp.0.linear_2", text_hidden, e4), t("merger.mlp.0.linear_2.bias", text_hidden),
    ]


@register
class MiniCPMV4_6(VisionEncoderMixin, Qwen3_5):
    """MiniCPM-V 4.6 / 4.7 / MiniCPM-OCR: Qwen3.5's hybrid decoder plus the Idefics2 tower and mergers."""

    supports_encoder_tp_data = True  # declared by vLLM's model class (0.33.0)

    architectures = ("MiniCPMV4_6ForConditionalGeneration", "MiniCPMV4_7ForConditionalGeneration",
                     "MiniCPMOcrForConditionalGeneration")
    modalities = ("image",)  # _mark_tower_model(vllm_config, {"image"}): video runs through the image path

    def drops_last_layer(self) -> bool:
        """4.6 reads ``drop_vision_last_layer``; 4.7 and OCR always keep every layer."""
        if self.config.architecture != "MiniCPMV4_6ForConditionalGeneration":
            return False
        return bool(self.config.raw.get("drop_vision_last_layer", False))

    def state_dtype_pair(self, ctx: GraphContext) -> tuple[str, str]:
        """The recurrent state follows the flags alone: these architectures have no entry in
        vllm/model_executor/models/config.py::MODELS_CONFIG_MAP (0.33.0), so the text config's
        ``mamba_ssm_dtype`` is not copied into ``--mamba-ssm-cache-dtype`` as for Qwen3.5
        (``auto``: the model dtype; MiniCPMV4_6ForConditionalGeneration.get_mamba_state_dtype_from_config)."""
        return _GatedDeltaHybrid.state_dtype_pair(self, ctx)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        tp = 1 if ctx.mm_encoder_tp_mode == "data" else ctx.tensor_parallel_size
        return minicpmv4_6_tower(dict(_vision(config)), config.hidden_size, tp, self.drops_last_layer())

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """An estimate of the largest image: the source image plus ``max_slice_nums`` (9) slices of
        ``(scale_resolution / patch)² / 16`` tokens each (16x downsampling: vit_merger then merger;
        MiniCPMV4_6ProcessingInfo._compute_visual_tokens, scale_resolution 448 by default)."""
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        vc = _vision(config)
        slices = int(config.raw.get("max_slice_nums", 9))
        scale = int(config.raw.get("scale_resolution", 448))
        per = (scale // _need(vc, "patch_size")) ** 2 // 16
        return {"image": (slices + 1) * per}

    def encoder_output_width(self, config: Any) -> int:
        return config.hidden_size

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return Qwen3_5.weight_tensors(self, ctx) + self.tower_tensors(self.config, ctx)
