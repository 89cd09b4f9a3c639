"""ColPali (``ColPaliForRetrieval``, vLLM --runner pooling): PaliGemma with a ColBERT-style
per-token projection.

Mirrors vllm/model_executor/models/colpali.py::ColPaliModel (0.33.0), a
paligemma.py::PaliGemmaForConditionalGeneration built on the config's ``vlm_config``
(vmemplan/model_config.py lifts it to the top level).  One rank holds:

* the Gemma decoder (``text_config.model_type`` gemma -> GemmaForCausalLM, else Gemma2; vmemplan's
  classic.py::Gemma), its ``normalizer`` buffer and tied head;
* ``vision_tower``: SiglipVisionModel on ``vision_config`` (every layer, post-LayerNorm, no
  attention-pool head: SiglipVisionModel defaults ``use_head=False``) with its int64
  ``position_ids`` buffer of (image/patch)^2 rows, sharded over TP unless
  ``--mm-encoder-tp-mode data``;
* ``multi_modal_projector.linear``: nn.Linear(vision hidden -> ``vision_config.projection_dim``,
  bias), replicated;
* ``custom_text_proj``: nn.Linear(text hidden -> ``embedding_dim``, no bias) in the head dtype
  (vllm/config/model.py::ModelConfig.head_dtype: float32 for a pooling model unless the config's
  ``head_dtype`` says otherwise).

The decoder's layers keep their causal Attention, so the model owns a full-attention KV cache.
An image costs the SigLIP patch count in tokens (PaliGemmaProcessingInfo.get_num_image_tokens).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.classic import Gemma
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _need, _tower_tp, _vision, siglip_tower

__all__ = ["ColPali"]


@register
class ColPali(VisionEncoderMixin, Gemma):
    """``ColPaliForRetrieval`` -> colpali.py::ColPaliModel (0.33.0)."""

    architectures = ("ColPaliForRetrieval",)
    default_runner = "pooling"

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vc = _vision(config)
        c = _need(vc, "hidden_size")
        positions = (_need(vc, "image_size") // _need(vc, "patch_size")) ** 2
        proj = int(vc.get("projection_dim") or config.raw.get("projection_dim") or config.hidden_size)
        return siglip_tower(vc, _tower_tp(ctx)) + [
            WeightTensor("vision_tower.vision_model.embeddings.position_ids", "buffer", 1, positions, dtype="int64"),
            WeightTensor("multi_modal_projector.linear", "encoder", proj, c),
            WeightTensor("multi_modal_projector.linear.bias", "encoder", proj, 1),
        ]

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        vc = _vision(config)
        return {"image": (_need(vc, "image_size") // _need(vc, "patch_size")) ** 2}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        raw = self.config.raw
        dim = next((raw.get(k) for k in ("embedding_dim", "embed_dim", "dim", "projection_dim", "colbert_dim")
                    if raw.get(k)), None)
        out = super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)
        if dim:
            head = raw.get("head_dtype")
            dtype = None if head == "model" else (str(head) if isinstance(head, str) else "float32")
            out.append(WeightTensor("custom_text_proj", "linear", int(dim), self.config.hidden_size, dtype=dtype))
        return out
