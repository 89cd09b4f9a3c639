"""Kimi-K2.5 (``KimiK25ForConditionalGeneration``): the DeepSeek-V3-style MLA + MoE decoder of
:mod:`vmemplan.models.deepseek` plus the MoonViT3d encoder and Kimi-K2.5's patch-merger projector.

vllm/model_executor/models/kimi_k25.py (0.33.0): ``KimiK25ForConditionalGeneration.__init__`` builds,
under ``_mark_tower_model(vllm_config, "vision_chunk")``, ``vision_tower`` =
kimi_k25_vit.py::MoonViT3dPretrainedModel and ``mm_projector`` = KimiK25MultiModalProjector, both moved
to the model dtype, with the checkpoint's quantization ignored when it is compressed-tensors
(``_maybe_ignore_quant_config``); then the language model from ``text_config`` as
``DeepseekV2ForCausalLM`` (the text config's own ``quantization_config`` applies to it).

MoonViT3d has the tensors of Kimi-VL's MoonViT (:func:`vmemplan.models.kimi_vl.moonvit_tower`: patch
embed with bias, ``pos_emb_height × pos_emb_width × c`` table, LayerNorm ×2 and biased wqkv / wo /
fc0 / fc1 per block, final LayerNorm; the projector's LayerNorm and two biased replicated linears)
plus ``patch_embed.pos_emb.time_weight``, a non-persistent 1-D sin-cos buffer ``[pos_emb_time, 1, c]``
built in fp32 and cast to the model dtype with the tower (Learnable2DInterpPosEmbDivided_fixed).
The 2-D rotary table ``freqs_cis`` is registered on first use (no tensor at load).  The vision
blocks fall back to data parallelism when TP does not divide their heads
(vision.py::is_vit_use_data_parallel(num_heads)).  The vision config may spell its sizes
``vt_hidden_size`` etc.: transformers' Kimi_K25VisionConfig then keeps its own defaults (1152 wide,
27 layers, 16 heads, 4304 MLP), which vLLM reads.

Only ``mm_projector_type`` ``patchmerger`` (the released checkpoints) is planned.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.kimi_vl import KIMI_VL_IN_TOKEN_LIMIT, KimiVL, kimi_vl_image_tokens, moonvit_tower
from vmemplan.models.vision_towers import _vision

__all__ = ["KimiK25", "kimi_k25_vision"]

#: kimi_k25.py::MaxImageTokenMeta (0.33.0), the dummy image of the encoder budget
KIMI_K25_DUMMY_IMAGE = (3000, 3000)

#: transformers kimi_k25/configuration_kimi_k25.py::Kimi_K25VisionConfig defaults (5.20.2)
_VISION_DEFAULTS = {"patch_size": 14, "pos_emb_height": 64, "pos_emb_width": 64, "pos_emb_time": 4,
                    "num_attention_heads": 16, "num_hidden_layers": 27, "hidden_size": 1152,
                    "intermediate_size": 4304, "merge_kernel_size": [2, 2]}


def kimi_k25_vision(vc: Mapping[str, Any]) -> dict[str, Any]:
    """The vision config as vLLM reads it: the named fields, else the config class defaults (the
    ``vt_*`` spellings are not mapped by Kimi_K25VisionConfig); ``init_pos_emb_*`` wins over
    ``pos_emb_*`` (kimi_k25_vit.py::_get_pos_emb_size)."""
    out = {k: vc.get(k, d) for k, d in _VISION_DEFAULTS.items()}
    for dim in ("height", "width", "time"):
        legacy = vc.get(f"init_pos_emb_{dim}")
        out[f"init_pos_emb_{dim}"] = legacy if legacy is not None else out[f"pos_emb_{dim}"]
    return out


def dummy_image_tokens(config: Any, vc: Mapping[str, Any]) -> int:
    """Tokens of the 3000 x 3000 dummy image (kimi_k25.py::MaxImageTokenMeta) as Kimi-VL counts
    them, ``vc`` being the tower's sizes as vLLM reads them (``in_token_limit`` 4096 unless the
    config names it)."""
    limit = int(_vision(config).get("in_token_limit", config.raw.get("in_token_limit", KIMI_VL_IN_TOKEN_LIMIT)))
    k = vc["merge_kernel_size"]
    return kimi_vl_image_tokens(*KIMI_K25_DUMMY_IMAGE, patch_size=int(vc["patch_size"]),
                                kernel=(int(k[0]), int(k[1])), in_token_limit=limit)


@register
class KimiK25(KimiVL):
    """Kimi-K2.5: KimiVL's MoonViT tower and projector plus the temporal position buffer."""

    architectures = ("KimiK25ForConditionalGeneration",)
    #: KimiK25ProcessingInfo.get_supported_mm_limits: images and video arrive as "vision_chunk" items, and
    #: the tower is marked for that modality alone (``_mark_tower_model(vllm_config, "vision_chunk")``)
    modalities = ("vision_chunk",)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        raw = _vision(config)
        if str(raw.get("mm_projector_type", "patchmerger")) != "patchmerger":
            raise ModelConfigError(f"Kimi-K2.5 mm_projector_type {raw.get('mm_projector_type')!r} is not planned",
                                   hint="vmemplan plans the patchmerger projector of the released checkpoints")
        vc = kimi_k25_vision(raw)
        tp = 1 if ctx.mm_encoder_tp_mode == "data" or vc["num_attention_heads"] % ctx.tensor_parallel_size \
            else ctx.tensor_parallel_size
        out = moonvit_tower(vc, tp, config.hidden_size)
        out.append(WeightTensor("vision_tower.patch_embed.pos_emb.time_weight", "buffer",
                                int(vc["init_pos_emb_time"]), int(vc["hidden_size"])))
        return out

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        vc = kimi_k25_vision(_vision(config))
        return int(vc["hidden_size"]), int(vc["intermediate_size"])

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """An estimate: kimi_k25.py::MaxImageTokenMeta's 3000 x 3000 dummy image counted as Kimi-VL counts
        it (kimi_vl_image_tokens, patches above ``in_token_limit`` -- 4096 unless the config names it --
        scale the image down), as one ``vision_chunk`` item.  The checkpoint's remote image processor
        (media_tokens_calculator) may allow more."""
        if not self.tower_built(ctx):
            return {}
        return {"vision_chunk": dummy_image_tokens(config, kimi_k25_vision(_vision(config)))}

    def notes(self) -> tuple[str, ...]:
        return ("vision_chunk tokens per item estimated from a 3000 x 3000 image with in_token_limit 4096 "
                "(the checkpoint's remote image processor decides the real count)",)
