"""PaliGemma (``PaliGemmaForConditionalGeneration``: google/paligemma-3b-*, google/paligemma2-*):
a SigLIP tower and one linear projector in front of a Gemma or Gemma-2 decoder.

vllm/model_executor/models/paligemma.py::PaliGemmaForConditionalGeneration (0.33.0) builds, under
``_mark_tower_model(vllm_config, "image")``,

* ``vision_tower`` = siglip.py::SiglipVisionModel(vision_config): Conv2d patch embed with bias,
  ``(image_size / patch)²`` learned positions and their int64 ``position_ids`` buffer, every layer
  of [LayerNorm ×2, biased qkv/out/fc1/fc2] and the post-LayerNorm (``require_post_norm`` None with
  all layers kept), no attention-pool head (``use_head=False``); split over TP (the class lacks
  ``supports_encoder_tp_data``, so vLLM turns ``--mm-encoder-tp-mode data`` into ``weights``);
* ``multi_modal_projector.linear``: nn.Linear(vision hidden -> ``vision_config.projection_dim``,
  bias), whole on every rank;

then the language model from ``text_config``: ``GemmaForCausalLM`` when its ``model_type`` is
"gemma", else ``Gemma2ForCausalLM`` (vmemplan's classic.py::Gemma / gemma2.py::Gemma2, combined
with the tower half here).  The KV cache is the decoder's.  An image costs the SigLIP patch count
in tokens (PaliGemmaProcessingInfo.get_num_image_tokens -> the SigLIP encoder info).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import Adapter, adapter_class, register
from vmemplan.models.internvl import combined
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _need, _vision, siglip_tower

__all__ = ["PaliGemma", "SIGLIP_VISION_DEFAULTS", "siglip_vision", "siglip_with_positions"]

#: transformers' SiglipVisionConfig defaults (models/siglip/configuration_siglip.py) for the keys the
#: tower reads: PaliGemma configs leave ``image_size`` out when it is 224
SIGLIP_VISION_DEFAULTS: dict[str, Any] = {
    "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
    "num_channels": 3, "image_size": 224, "patch_size": 16,
}


def siglip_vision(config: Any) -> dict[str, Any]:
    """The config's ``vision_config`` over SiglipVisionConfig's defaults."""
    return {**SIGLIP_VISION_DEFAULTS, **_vision(config)}


def siglip_with_positions(vc: Any, tp: int, *, post_norm: bool = True, num_layers: int | None = None,
                          prefix: str = "vision_tower.vision_model") -> list[WeightTensor]:
    """siglip.py::SiglipVisionModel with the int64 ``position_ids`` buffer of its embeddings
    (``(image_size / patch)²`` entries), under ``prefix``."""
    tower = siglip_tower({"num_channels": 3, **vc}, tp, num_layers, post_norm=post_norm)
    npos = (_need(vc, "image_size") // _need(vc, "patch_size")) ** 2
    tower.append(WeightTensor("vision_tower.vision_model.embeddings.position_ids", "buffer", 1, npos,
                              dtype="int64"))
    if prefix != "vision_tower.vision_model":
        tower = [WeightTensor(t.name.replace("vision_tower.vision_model", prefix, 1), t.kind, t.rows, t.cols,
                              t.count, dtype=t.dtype) for t in tower]
    return tower


class _PaliGemmaTower(VisionEncoderMixin):
    """The tower half; combined with the Gemma / Gemma-2 adapter by :func:`_combined`."""

    modalities = ("image",)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc = siglip_vision(config)
        c = _need(vc, "hidden_size")
        # PaliGemmaConfig.__init__ sets vision_config.projection_dim = its own projection_dim (2048 default)
        proj = int(config.raw.get("projection_dim") or 2048)
        return siglip_with_positions(vc, ctx.tensor_parallel_size) + [
            WeightTensor("multi_modal_projector.linear", "encoder", proj, c),
            WeightTensor("multi_modal_projector.linear.bias", "encoder", proj, 1),
        ]

    def encoder_output_width(self, config: Any) -> int:
        return config.hidden_size


    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        vc = siglip_vision(config)
        return {"image": (_need(vc, "image_size") // _need(vc, "patch_size")) ** 2}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)  # type: ignore[misc]


def _combined(tower: type, lm_arch: str, config: Any) -> Adapter:
    lm = adapter_class(lm_arch)
    assert lm is not None, lm_arch
    return combined(tower, lm, config)


@register
class PaliGemma(_PaliGemmaTower, Adapter):
    """``PaliGemmaForConditionalGeneration``: SigLIP + ``multi_modal_projector.linear`` + Gemma / Gemma-2."""

    architectures = ("PaliGemmaForConditionalGeneration",)

    def __new__(cls, config: Any) -> Any:
        gemma = str(config.text.get("model_type", "gemma")) == "gemma"
        return _combined(_PaliGemmaTower, "GemmaForCausalLM" if gemma else "Gemma2ForCausalLM", config)
