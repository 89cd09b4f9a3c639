"""Ovis (``Ovis``: Ovis2, Ovis1.6 with an AIMv2 backbone): a visual tokenizer (ViT + head), a visual
embedding table, and the language model of ``llm_config``.

vllm/model_executor/models/ovis.py (0.33.0), ``Ovis.__init__``, configured by
vllm/transformers_utils/configs/ovis.py::OvisConfig (vLLM registers model_type "ovis" itself):

* under ``_mark_language_model``: ``init_vllm_registered_model`` on ``get_text_config()`` (the
  ``llm_config``) under the prefix ``llm``: planned by that architecture's own adapter, combined with
  the tower below (:func:`vmemplan.models.internvl.combined`);
* under ``_mark_tower_model(vllm_config, "image")``:

  - ``visual_tokenizer.backbone`` = aimv2.py::AIMv2Model(require_post_norm=False) for an
    ``aimv2_visual_tokenizer`` (backbone model_type aimv2): AIMv2ViTPreprocessor (Conv2dLayer patch
    embed with bias, an RMSNorm, the ``pos_embed`` parameter of ``(image_size / patch)²`` rows), then
    ``num_hidden_layers`` AIMv2Block (RMSNorm ``norm_1`` / ``norm_2``, QKVParallelLinear ``qkv``
    biased under ``qkv_bias``, RowParallelLinear ``proj`` and the SwiGLU MergedColumnParallel ``fc13`` /
    RowParallel ``fc2`` biased under ``mlp_bias``), split over TP; no post-trunk norm.  A
    ``siglip_visual_tokenizer`` (siglip.py::SiglipVisionModel) is not planned here;
  - ``visual_tokenizer.head`` = ReplicatedLinear(backbone hidden · hidden_stride² → vocab_size − 5, no
    bias) and a LayerNorm of ``vocab_size − 5`` (``IMAGE_INDICATOR_IDS``: five indicator ids);
  - ``vte`` = VisualEmbedding (nn.Embedding ``vocab_size × hidden_size``, the top-level hidden size).

No ``supports_encoder_tp_data``: ``--mm-encoder-tp-mode data`` runs as ``weights``.

Encoder profile: the dummy image is ``OvisProcessor.get_image_size() · hidden_stride · 9`` square
(``get_image_size_with_most_features``); the processor size is the preprocessor_config's, taken here as
the backbone's ``image_size``.  For that square image no grid covers more than the threshold, so
``preprocess_image`` picks the grid of best covering, 3 × 3 (``max_partition`` 9): the placeholder of
``construct_image_placeholders`` is 21 indicator tokens (start, atom, prefix, 9 atoms, 6 column and 2
row separators, end) plus ``image_segment_len`` pads after each of the 10 atoms, with
``image_segment_len = (ceil(image_size / patch) / hidden_stride)² − 1`` (``get_image_segment_len``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import Adapter, register
from vmemplan.models.internvl import _language_model_class, combined
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _need, _split, _tower_tp

__all__ = ["Ovis", "OvisTowerBase", "aimv2_tower", "visual_head"]

#: ovis.py::IMAGE_INDICATOR_IDS: five ids of the visual vocabulary without head rows
INDICATORS = 5
#: the best-covering grid of the dummy square image (see the module): 21 indicators, 10 atoms
GRID_INDICATORS, GRID_ATOMS = 21, 10


def tokenizer_config(config: Any) -> Mapping[str, Any]:
    vt = config.raw.get("visual_tokenizer_config")
    if not isinstance(vt, Mapping) or not isinstance(vt.get("backbone_config"), Mapping):
        raise ModelConfigError(f"{config.architecture}: config.json lacks visual_tokenizer_config.backbone_config",
                               hint="Ovis checkpoints carry the ViT under visual_tokenizer_config")
    return vt


def _backbone(config: Any) -> Mapping[str, Any]:
    bc = tokenizer_config(config)["backbone_config"]
    if str(bc.get("model_type", "")) not in ("aimv2", "aimv2_vision_model"):
        raise ModelConfigError(f"{config.architecture}: backbone {bc.get('model_type')!r} is not planned",
                               hint="vmemplan plans Ovis with the AIMv2 backbone only")
    out: Mapping[str, Any] = bc
    return out


def aimv2_tower(vc: Mapping[str, Any], tp: int, prefix: str = "visual_tokenizer.backbone") -> list[WeightTensor]:
    """aimv2.py::AIMv2Model without the post-trunk norm (see the module)."""
    c, heads, inter = _need(vc, "hidden_size"), _need(vc, "num_attention_heads"), _need(vc, "intermediate_size")
    n, patch, size = _need(vc, "num_hidden_layers"), _need(vc, "patch_size"), _need(vc, "image_size")
    _split(heads, tp, "attention heads")
    q, i = _split(c, tp, "width"), _split(inter, tp, "MLP width")

    def t(name: str, rows: int, cols: int = 1, count: int = 1) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols, count)

    out = [
        t("preprocessor.patchifier.proj", c, int(vc.get("num_channels", 3)) * patch * patch),
        t("preprocessor.patchifier.proj.bias", c), t("preprocessor.patchifier.norm", c),
        t("preprocessor.pos_embed", (size // patch) ** 2, c),
        t("trunk.blocks.norm_1+norm_2", c, 1, 2 * n),
        t("trunk.blocks.attn.qkv", 3 * q, c, n), t("trunk.blocks.attn.proj", c, q, n),
        t("trunk.blocks.mlp.fc13", 2 * i, c, n), t("trunk.blocks.mlp.fc2", c, i, n),
    ]
    if bool(vc.get("qkv_bias", False)):
        out.append(t("trunk.blocks.attn.qkv.bias", 3 * q, 1, n))
    if bool(vc.get("mlp_bias", False)):
        out += [t("trunk.blocks.attn.proj.bias", c, 1, n), t("trunk.blocks.mlp.fc13.bias", 2 * i, 1, n),
                t("trunk.blocks.mlp.fc2.bias", c, 1, n)]
    return out


def visual_head(vocab: int, indicators: int, width: int, hidden: int) -> list[WeightTensor]:
    """The visual head (ReplicatedLinear ``width → vocab − indicators``, no bias, and a LayerNorm of
    that size) and ``vte``, the nn.Embedding ``vocab × hidden`` (ovis.py / ovis2_5.py)."""
    return [
        WeightTensor("visual_tokenizer.head.0", "encoder", vocab - indicators, width),
        WeightTensor("visual_tokenizer.head.1", "encoder", vocab - indicators, 1, 2),
        WeightTensor("vte", "encoder", vocab, hidden),
    ]


class OvisTowerBase(VisionEncoderMixin):
    """What Ovis and Ovis2.5 share: ``hidden_stride²`` patches per token, the ViT's dimensions for the
    activation estimate, the LM-wide encoder output.  Subclasses give :meth:`vit` and :meth:`stride`."""

    def vit(self, config: Any) -> Mapping[str, Any]:  # pragma: no cover - each tower's
        raise NotImplementedError

    def stride(self, config: Any) -> int:  # pragma: no cover - each tower's
        raise NotImplementedError

    @property
    def patches_per_token(self) -> int:
        return self.stride(self.config) ** 2  # type: ignore[attr-defined]

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        vc = self.vit(config)
        return _need(vc, "hidden_size"), _need(vc, "intermediate_size")

    def encoder_output_width(self, config: Any) -> int:
        return int(config.hidden_size)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        lm: list[WeightTensor] = super().weight_tensors(ctx)  # type: ignore[misc]
        return lm + self.tower_tensors(self.config, ctx)  # type: ignore[attr-defined]


class _OvisTower(OvisTowerBase):
    """The tower half; combined with the language model's adapter by :func:`combined`."""

    modalities = ("image",)

    def vit(self, config: Any) -> Mapping[str, Any]:
        return _backbone(config)

    def stride(self, config: Any) -> int:
        return int(tokenizer_config(config).get("hidden_stride", 1))

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        vt, bc = tokenizer_config(config), _backbone(config)
        width = _need(bc, "hidden_size") * self.stride(config) ** 2
        hidden = int(config.raw.get("hidden_size") or config.hidden_size)
        return aimv2_tower(bc, _tower_tp(ctx)) + visual_head(int(vt.get("vocab_size", 16384)), INDICATORS, width,
                                                            hidden)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "image") <= 0:
            return {}
        bc = _backbone(config)
        side = -(-_need(bc, "image_size") // _need(bc, "patch_size"))
        segment = (side // self.stride(config)) ** 2 - 1
        return {"image": GRID_INDICATORS + GRID_ATOMS * segment}


@register
class Ovis(_OvisTower, Adapter):
    """``Ovis``: AIMv2 visual tokenizer + ``vte`` + the ``llm_config`` model."""

    architectures = ("Ovis",)

    def __new__(cls, config: Any) -> Any:
        return combined(_OvisTower, _language_model_class(config), config)
