"""Phi-3-vision / Phi-3.5-vision (``Phi3VForCausalLM``): a Phi-3 decoder built as vLLM's
LlamaForCausalLM, plus the HD image embedding over a fixed CLIP ViT-L/14-336.

Mirrors vllm/model_executor/models/phi3v.py (0.33.0).  One rank holds, besides the decoder
(``init_vllm_registered_model(..., architectures=["LlamaForCausalLM"])`` on the Phi-3 config:
vmemplan's LlamaLike, with its own ``embed_tokens`` and untied ``lm_head``):

* ``embed_tokens``: a second VocabParallelEmbedding (vocab padded to 64, split), built with the
  tower.  ``load_weights`` re-points it at the decoder's table only when the checkpoint has no
  ``model.vision_embed_tokens.wte.weight``; at construction (what vLLM allocates first) both exist;
* ``vision_embed_tokens.img_processor``: ``CLIP_VIT_LARGE_PATCH14_336_CONFIG`` (hidden 1024,
  24 layers, 16 heads, MLP 4096, 336 px, patch 14; the config's own ``vision_config`` is not
  read) built up to ``img_processor.layer_idx`` (-2: 23 layers, no post-LayerNorm), sharded over
  TP unless ``--mm-encoder-tp-mode data``;
* ``glb_GN`` and ``sub_GN``: ``image_dim_out * 4`` elements each; ``img_projection``: two
  nn.Linear with bias (``image_dim_out * 4 -> hidden``, ``hidden -> hidden``), replicated.

Image tokens: the HF Phi3VImageProcessor's ``calc_num_image_tokens_from_image_size`` for vLLM's
largest dummy image, 8000 x 50 (``get_image_size_with_most_features``): the HD transform to at
most ``num_crops`` 336-px crops, ``(crops + 1) * 144 + 1 + (rows + 1) * 12``.
"""

from __future__ import annotations

import math
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import pad_vocab, register
from vmemplan.models.dense import LlamaLike
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _tower_tp, clip_tower

__all__ = ["Phi3V", "phi3v_image_tokens"]

#: phi3v.py::CLIP_VIT_LARGE_PATCH14_336_CONFIG
CLIP_L_336 = {"hidden_size": 1024, "image_size": 336, "intermediate_size": 4096, "num_attention_heads": 16,
              "num_channels": 3, "num_hidden_layers": 24, "patch_size": 14}
#: the num_crops of microsoft/Phi-3-vision-128k-instruct's preprocessor_config.json (processor default)
DEFAULT_NUM_CROPS = 16


def phi3v_image_tokens(width: int, height: int, *, num_crops: int = DEFAULT_NUM_CROPS) -> int:
    """Phi3VImageProcessor.calc_num_image_tokens_from_image_size: the HD transform scales the
    longer side to ``scale * 336`` with ``scale * ceil(scale / ratio) <= num_crops`` and pads the
    other to a multiple of 336; tokens = (crops + 1) * 144 + 1 + (crop rows + 1) * 12."""
    transposed = width < height
    if transposed:
        width, height = height, width
    ratio = width / height
    scale = 1
    while scale * math.ceil(scale / ratio) <= num_crops:
        scale += 1
    scale -= 1
    new_w = int(scale * 336)
    new_h = math.ceil(int(new_w / ratio) / 336) * 336
    if transposed:
        new_w, new_h = new_h, new_w
    return (new_h // 336 * new_w // 336 + 1) * 144 + 1 + (new_h // 336 + 1) * 12


@register
class Phi3V(VisionEncoderMixin, LlamaLike):
    """``Phi3VForCausalLM`` (phi3v.py, 0.33.0)."""

    architectures = ("Phi3VForCausalLM",)

    def _img(self) -> dict[str, Any]:
        img = self.config.raw.get("img_processor")
        return dict(img) if isinstance(img, dict) else {}

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        return CLIP_L_336["hidden_size"], CLIP_L_336["intermediate_size"]

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        img = self._img()
        idx = int(img.get("layer_idx", -2))
        total = CLIP_L_336["num_hidden_layers"]
        layers = total + idx + 1 if idx < 0 else idx + 1
        out = clip_tower(CLIP_L_336, _tower_tp(ctx), layers)
        out = [WeightTensor(t.name.replace("vision_tower.", "vision_embed_tokens.img_processor.", 1), t.kind, t.rows,
                            t.cols, t.count, dtype=t.dtype) for t in out]
        dim = int(img.get("image_dim_out", CLIP_L_336["hidden_size"])) * 4
        h = config.hidden_size
        tp = ctx.tensor_parallel_size
        out += [
            WeightTensor("embed_tokens", "embedding", pad_vocab(config.vocab_size) // tp, h),
            WeightTensor("vision_embed_tokens.glb_GN+sub_GN", "encoder", dim, 1, 2),
            WeightTensor("vision_embed_tokens.img_projection.0", "encoder", h, dim),
            WeightTensor("vision_embed_tokens.img_projection.2", "encoder", h, h),
            WeightTensor("vision_embed_tokens.img_projection.biases", "encoder", h, 1, 2),
        ]
        return out

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        crops = int(config.raw.get("num_crops", DEFAULT_NUM_CROPS))
        return {"image": phi3v_image_tokens(50, 8000, num_crops=crops)}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)
