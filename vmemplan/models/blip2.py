"""BLIP-2 (``Blip2ForConditionalGeneration``, e.g. Salesforce/blip2-opt-2.7b): a BLIP vision
transformer, a Q-Former and a linear projection in front of the ``text_config`` language model.

vllm/model_executor/models/blip2.py::Blip2ForConditionalGeneration.__init__ (0.33.0) builds, under
``_mark_tower_model(vllm_config, "image")``:

* ``vision_model`` = blip.py::BlipVisionModel(vision_config) (:func:`blip_vision_tower`):
  BlipVisionEmbeddings (``class_embedding`` [1, 1, c], Conv2dLayer patch embed with bias, a
  ``position_embedding`` parameter of patches + 1 rows), ``num_hidden_layers`` × BlipEncoderLayer
  (BlipAttention: QKVParallelLinear ``qkv`` with a bias under ``qkv_bias`` and RowParallelLinear
  ``projection`` with bias; BlipMLP: ColumnParallelLinear ``fc1`` / RowParallelLinear ``fc2`` with
  bias; ``layer_norm1`` / ``layer_norm2``) split over TP, and ``post_layernorm`` (every layer
  runs, so ``require_post_norm`` resolves true).  The layout is CLIP's
  (:func:`vmemplan.models.vision_towers._clip_like`) with BLIP's names, a patch-embed bias and no
  ``position_ids`` buffer;
* ``query_tokens``: a bare ``nn.Parameter`` [1, num_query_tokens, qformer hidden] — allocated even
  when images are limited to 0 (``_mark_tower_model``'s ``no_init_weights`` stands in for child
  modules only);
* ``qformer`` = Blip2QFormerModel (:func:`qformer_tensors`): ``layernorm`` and
  ``num_hidden_layers`` × Blip2QFormerLayer, all plain ``nn.Linear`` / ``nn.LayerNorm``
  (replicated on every rank): self-attention query/key/value + ``output.dense`` +
  ``output.LayerNorm``; on layers with ``layer_idx % cross_attention_frequency == 0`` the same
  block as ``crossattention`` with key/value reading ``encoder_hidden_size``; the query
  feed-forward ``intermediate_query.dense`` / ``output_query.dense`` + ``output_query.LayerNorm``
  (vLLM builds no text feed-forward ``intermediate`` / ``output``);
* ``language_projection`` nn.Linear(qformer hidden → text hidden, bias);

then ``init_vllm_registered_model(hf_config=config.text_config)`` (OPTForCausalLM for the OPT
releases: :class:`vmemplan.models.classic.OPT`).  The class does not declare
``supports_encoder_tp_data``.  Each image becomes ``num_query_tokens`` LM tokens
(Blip2ProcessingInfo.get_num_image_tokens; at most one image a prompt:
``get_supported_mm_limits``); the tower reads patches + 1 positions for them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import Adapter, register
from vmemplan.models.internvl import language_model_new
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _clip_like, _need

__all__ = ["Blip2", "blip_vision_tower", "qformer_tensors"]

#: transformers' Blip2VisionConfig / Blip2QFormerConfig defaults (the released configs omit them)
VISION_DEFAULTS = {"hidden_size": 1408, "intermediate_size": 6144, "num_hidden_layers": 39,
                   "num_attention_heads": 16, "image_size": 224, "patch_size": 14, "qkv_bias": True}
QFORMER_DEFAULTS = {"hidden_size": 768, "num_hidden_layers": 12, "intermediate_size": 3072,
                    "cross_attention_frequency": 2, "encoder_hidden_size": 1408}
#: CLIP's tensor names (``_clip_like``) -> BlipVisionModel's
_BLIP_NAMES = {"self_attn.qkv_proj": "self_attn.qkv", "self_attn.out_proj": "self_attn.projection"}


def _with_defaults(section: Any, defaults: Mapping[str, Any]) -> dict[str, Any]:
    return {**defaults, **(section if isinstance(section, Mapping) else {})}


def blip_vision_tower(vc: Mapping[str, Any], tp: int, prefix: str = "vision_model") -> list[WeightTensor]:
    """blip.py::BlipVisionModel with every layer (see the module docstring)."""
    out = []
    for t in _clip_like(vc, tp, _need(vc, "num_hidden_layers"), class_token=True, pre_norm=False,
                        post_norm=True, prefix=prefix):
        if t.name.endswith("position_ids"):
            continue  # BlipVisionEmbeddings registers no position_ids buffer
        if not bool(vc.get("qkv_bias", True)) and t.name.endswith("qkv_proj.bias"):
            continue
        name = t.name
        for clip, blip in _BLIP_NAMES.items():
            name = name.replace(clip, blip)
        out.append(dataclasses.replace(t, name=name))
    c = _need(vc, "hidden_size")
    return out + [WeightTensor(f"{prefix}.embeddings.patch_embedding.bias", "encoder", c, 1)]


def qformer_tensors(qc: Mapping[str, Any], prefix: str = "qformer") -> list[WeightTensor]:
    """blip2.py::Blip2QFormerModel: replicated ``nn.Linear`` / ``nn.LayerNorm`` (module docstring)."""
    q, n = _need(qc, "hidden_size"), _need(qc, "num_hidden_layers")
    inter, enc = _need(qc, "intermediate_size"), _need(qc, "encoder_hidden_size")
    freq = _need(qc, "cross_attention_frequency")
    cross = len(range(0, n, freq))

    def t(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols, count)

    def attention(block: str, kv_in: int, count: int) -> list[WeightTensor]:
        return [t(f"encoder.layer.{block}.attention.query", q, q, count),
                t(f"encoder.layer.{block}.attention.key+value", q, kv_in, 2 * count),
                t(f"encoder.layer.{block}.attention.query+key+value.bias", q, 1, 3 * count),
                t(f"encoder.layer.{block}.output.dense", q, q, count),
                t(f"encoder.layer.{block}.output.dense.bias+LayerNorm", q, 1, 3 * count)]

    return [
        t("layernorm", q, 1, 2),
        *attention("attention", q, n),
        *(attention("crossattention", enc, cross) if cross else []),
        t("encoder.layer.intermediate_query.dense", inter, q, n),
        t("encoder.layer.intermediate_query.dense.bias", inter, 1, n),
        t("encoder.layer.output_query.dense", q, inter, n),
        t("encoder.layer.output_query.dense.bias+LayerNorm", q, 1, 3 * n),
    ]


class _Blip2Tower(VisionEncoderMixin):
    """The tower half; combined with the ``text_config`` adapter by ``internvl.language_model_new``."""

    bare_tower_parameters = ("query_tokens",)

    def vision_config(self, config: Any) -> dict[str, Any]:
        return _with_defaults(config.raw.get("vision_config"), VISION_DEFAULTS)

    def qformer_config(self, config: Any) -> dict[str, Any]:
        return _with_defaults(config.raw.get("qformer_config"), QFORMER_DEFAULTS)

    def query_count(self, config: Any) -> int:
        return int(config.raw.get("num_query_tokens", 32))

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        """The BLIP tower (split over TP: no ``supports_encoder_tp_data``), ``query_tokens``, the
        Q-Former and ``language_projection``."""
        qh = _need(self.qformer_config(config), "hidden_size")
        h = config.hidden_size
        return [*blip_vision_tower(self.vision_config(config), ctx.tensor_parallel_size),
                WeightTensor("query_tokens", "encoder", self.query_count(config), qh),
                *qformer_tensors(self.qformer_config(config)),
                WeightTensor("language_projection", "encoder", h, qh),
                WeightTensor("language_projection.bias", "encoder", h, 1)]

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        vc = self.vision_config(config)
        return _need(vc, "hidden_size"), _need(vc, "intermediate_size")

    @property
    def patches_per_token(self) -> int:  # type: ignore[override]
        """Tower positions (patches + class token) per query token, rounded up (an estimate)."""
        vc = self.vision_config(self.config)  # type: ignore[attr-defined]
        positions = (_need(vc, "image_size") // _need(vc, "patch_size")) ** 2 + 1
        return -(-positions // self.query_count(self.config))  # type: ignore[attr-defined]

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        return {"image": self.query_count(config)}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return super().weight_tensors(ctx) + self.tower_tensors(self.config, ctx)  # type: ignore[misc]


@register
class Blip2(_Blip2Tower, Adapter):
    """``Blip2ForConditionalGeneration``: BLIP ViT + Q-Former + projection + the ``text_config`` model."""

    architectures = ("Blip2ForConditionalGeneration",)

    __new__ = language_model_new(_Blip2Tower)

