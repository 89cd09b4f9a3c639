"""GLM-4V (``GLM4VForCausalLM``, THUDM/glm-4v-9b): ChatGLM with an EVA2-CLIP tower.

vllm/model_executor/models/glm4v.py (0.33.0): GLM4VForCausalLM is chatglm.py's ChatGLMBaseModel
over GLM4VModel (ChatGLMModel plus ``transformer.vision``, an EVA2CLIPModel), built under
``_mark_composite_model(tower_targets={"image": EVA2CLIPModel})`` so the tower is dropped when
``--limit-mm-per-prompt`` gives images 0.  The language model is
:class:`vmemplan.models.chatglm.ChatGLM`'s.  The tower (``vision_config``, a plain dict):

* EVA2CLIPPatchEmbedding: Conv2dLayer ``proj`` (``in_channels`` -> c, ``patch_size`` kernel,
  bias), ``cls_embedding`` [1, c], ``position_embedding`` ``nn.Embedding(num_positions, c)``;
* per EVA2CLIPTransformerLayer: ``input_layernorm`` / ``post_attention_layernorm`` (LayerNorm,
  weight and bias), EVA2CLIPAttention's QKVParallelLinear ``query_key_value`` (``num_heads``
  heads of c / heads, bias) and RowParallelLinear ``dense`` (bias, whole on every rank), and
  EVA2CLIPMLP's ColumnParallel ``fc1`` / RowParallel ``fc2`` (biases); split over TP;
* EVA2CLIPGLU ``linear_proj`` (on the text hidden size h): ReplicatedLinear ``linear_proj``
  [h, h] without bias, ``norm1`` LayerNorm(h), MergedColumnParallel ``merged_proj``
  [2 x ``ffn_hidden_size``, h] and RowParallel ``dense_4h_to_h``, no biases;
* ``conv``: Conv2dLayer c -> h, kernel 2 (bias); ``boi`` / ``eoi`` [h].

No ``supports_encoder_tp_data`` (``--mm-encoder-tp-mode data`` runs as ``weights``).  Encoder
cache: GLM4VProcessingInfo allows one image, of ``(image_size / patch / 2)² + 2`` tokens
(get_num_image_feature_tokens: the 2 x 2 conv's grid plus ``boi`` / ``eoi``).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.chatglm import ChatGLM
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _need, _split, _vision

__all__ = ["GLM4V", "eva2clip_tower"]


def eva2clip_tower(vc: Any, text_hidden: int, text_ffn: int, tp: int,
                   prefix: str = "transformer.vision") -> list[WeightTensor]:
    """glm4v.py::EVA2CLIPModel's tensors on one rank (see the module docstring)."""
    c, heads = _need(vc, "hidden_size"), _need(vc, "num_heads")
    inter, n = _need(vc, "intermediate_size"), _need(vc, "num_hidden_layers")
    patch, chans = _need(vc, "patch_size"), int(vc.get("in_channels", 3))
    q = _split(heads, tp, "vision heads") * (c // heads)
    i, f, h = _split(inter, tp, "vision MLP width"), _split(text_ffn, tp, "GLU width"), text_hidden

    def t(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols, count)

    return [
        t("patch_embedding.proj", c, chans * patch * patch), t("patch_embedding.proj.bias", c),
        t("patch_embedding.cls_embedding", c), t("patch_embedding.position_embedding", _need(vc, "num_positions"), c),
        t("transformer.layers.input_layernorm+post_attention_layernorm", c, 1, 4 * n),
        t("transformer.layers.attention.query_key_value", 3 * q, c, n),
        t("transformer.layers.attention.query_key_value.bias", 3 * q, 1, n),
        t("transformer.layers.attention.dense", c, q, n), t("transformer.layers.attention.dense.bias", c, 1, n),
        t("transformer.layers.mlp.fc1", i, c, n), t("transformer.layers.mlp.fc1.bias", i, 1, n),
        t("transformer.layers.mlp.fc2", c, i, n), t("transformer.layers.mlp.fc2.bias", c, 1, n),
        t("linear_proj.linear_proj", h, h), t("linear_proj.norm1", h, 1, 2),
        t("linear_proj.merged_proj", 2 * f, h), t("linear_proj.dense_4h_to_h", h, f),
        t("conv", h, c * 4), t("conv.bias", h), t("boi+eoi", h, 1, 2),
    ]


@register
class GLM4V(VisionEncoderMixin, ChatGLM):
    """``GLM4VForCausalLM``: the ChatGLM decoder plus ``transformer.vision`` (EVA2-CLIP)."""

    architectures = ("GLM4VForCausalLM",)  # type: ignore[assignment]

    @property
    def patches_per_token(self) -> int:
        return 4  # the 2 x 2 stride-2 conv after the tower

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return eva2clip_tower(_vision(config), config.hidden_size, config.intermediate_size,
                              ctx.tensor_parallel_size)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        vc = _vision(config)
        grid = _need(vc, "image_size") // _need(vc, "patch_size") // 2
        return {"image": grid * grid + 2}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)
