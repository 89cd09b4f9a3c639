"""Gemma-4 Unified (``Gemma4UnifiedForConditionalGeneration``, e.g. google/gemma-4-12B): the
encoder-free Gemma-4: raw image patches and raw audio frames projected straight into the text
model's embedding space, no SigLIP tower and no audio tower.

vllm/model_executor/models/gemma4_unified.py::Gemma4UnifiedForConditionalGeneration.__init__
(0.33.0) rebuilds the model without ``Gemma4ForConditionalGeneration.__init__``:

* ``vision_embedder`` = Gemma4UnifiedVisionEmbedder on ``vision_config`` (patch_dim =
  ``(patch_size · pooling_kernel_size)² · 3``; the config's ``model_patch_size`` is that product):
  ``patch_ln1`` nn.LayerNorm(patch_dim), ``patch_dense`` ColumnParallelLinear(patch_dim →
  ``mm_embed_dim``, biased, ``gather_output``: rows and bias split over TP), ``patch_ln2`` and
  ``pos_norm`` nn.LayerNorm(mm_embed_dim), ``pos_embedding`` nn.Parameter(``mm_posemb_size`` × 2 ×
  mm_embed_dim);
* ``embed_vision`` and, with an ``audio_config``, ``embed_audio`` = gemma4_mm.py::
  Gemma4MultimodalEmbedder: a ReplicatedLinear ``output_proj_dims → text hidden`` (no bias) and a
  weightless RMSNorm whose ``torch.ones(output_proj_dims)`` stays a plain device tensor (the
  audio config's ``output_proj_dims`` is its ``audio_embed_dim``);
* under ``_mark_language_model``: ``Gemma4ForCausalLM`` on ``text_config`` (gemma4.py::Gemma4) and,
  when ``hidden_size_per_layer_input`` > 0, the PLE buffer (gemma4_audio.py::gemma4_ple_buffer).

None of these is built under ``_mark_tower_model``: they are there whatever
``--limit-mm-per-prompt`` / ``--language-model-only`` say, and on every pipeline stage.  The
class does not declare ``supports_encoder_tp_data``.

Tokens per item (Gemma4UnifiedProcessingInfo.get_mm_max_tokens_per_item): an image is
``vision_config.num_soft_tokens`` (280), audio the processor's ``audio_seq_length`` (transformers
Gemma4UnifiedProcessor default 750), a video ``_VIDEO_MAX_FRAMES`` (32) × (``_VIDEO_MAX_SOFT_TOKENS``
(70) + 2 + 6).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.base import register
from vmemplan.models.gemma4 import Gemma4
from vmemplan.models.gemma4_audio import _cfg_int, gemma4_ple_buffer
from vmemplan.models.multimodal import VisionEncoderMixin
from vmemplan.models.vision_towers import _split

__all__ = ["Gemma4Unified", "gemma4_unified_embedders"]

#: gemma4_mm.py::_VIDEO_MAX_FRAMES and _VIDEO_MAX_SOFT_TOKENS; the 2 + 6 tokens around each frame
VIDEO_MAX_FRAMES, VIDEO_FRAME_TOKENS = 32, 70 + 2 + 6
#: transformers Gemma4UnifiedProcessor ``audio_seq_length`` default (5.20.2)
AUDIO_SEQ_LENGTH = 750


def _patch_dim(vc: Mapping[str, Any]) -> int:
    side = _cfg_int(vc, "patch_size", 16) * _cfg_int(vc, "pooling_kernel_size", 3)
    return side * side * 3


def _embedder(name: str, width: int, text_hidden: int) -> list[WeightTensor]:
    """gemma4_mm.py::Gemma4MultimodalEmbedder on ``width`` (its output_proj_dims)."""
    return [
        WeightTensor(f"{name}.embedding_projection", "linear", text_hidden, width, 1, True, in_features_full=width),
        WeightTensor(f"{name}.embedding_pre_projection_norm(ones, not a parameter)", "buffer", width, 1),
    ]


def gemma4_unified_embedders(raw: Mapping[str, Any], text_hidden: int, tp: int) -> list[WeightTensor]:
    """The vision embedder, ``embed_vision`` and ``embed_audio`` one rank holds (Gemma4Unified*
    config defaults for keys config.json omits)."""
    vc = raw.get("vision_config") or {}
    mm = _cfg_int(vc, "mm_embed_dim", 3840)
    pd = _patch_dim(vc)
    rows = _split(mm, tp, "patch_dense width")
    out = [
        WeightTensor("vision_embedder.patch_ln1 (weight, bias)", "encoder", pd, 1, 2),
        WeightTensor("vision_embedder.patch_dense", "encoder", rows, pd),
        WeightTensor("vision_embedder.patch_dense.bias", "encoder", rows, 1),
        WeightTensor("vision_embedder.patch_ln2+pos_norm (weight, bias)", "encoder", mm, 1, 4),
        WeightTensor("vision_embedder.pos_embedding", "encoder", _cfg_int(vc, "mm_posemb_size", 1120) * 2, mm),
        *_embedder("embed_vision", _cfg_int(vc, "output_proj_dims", 3840), text_hidden),
    ]
    ac = raw.get("audio_config")
    if isinstance(ac, Mapping):
        width = _cfg_int(ac, "audio_embed_dim", _cfg_int(ac, "output_proj_dims", 640))
        out += _embedder("embed_audio", width, text_hidden)
    return out


@register
class Gemma4Unified(VisionEncoderMixin, Gemma4):
    """``Gemma4UnifiedForConditionalGeneration``: Gemma-4 text + the encoder-free embedders."""

    architectures = ("Gemma4UnifiedForConditionalGeneration",)

    @property
    def modalities(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("image", "video", "audio") if isinstance(self.config.raw.get("audio_config"), Mapping) \
            else ("image", "video")

    def multimodal_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        text = self.config.raw.get("text_config") or {}
        return (gemma4_unified_embedders(self.config.raw, self.config.hidden_size, ctx.tensor_parallel_size)
                + gemma4_ple_buffer(text, ctx))

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        """(mm_embed_dim, patch_dim): the embedder's widths, for the activation estimate."""
        vc = config.raw.get("vision_config") or {}
        return _cfg_int(vc, "mm_embed_dim", 3840), _patch_dim(vc)

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        vc = config.raw.get("vision_config") or {}
        table = {"image": _cfg_int(vc, "num_soft_tokens", 280), "video": VIDEO_MAX_FRAMES * VIDEO_FRAME_TOKENS}
        if "audio" in self.modalities:
            table["audio"] = AUDIO_SEQ_LENGTH
        return {m: n for m, n in table.items() if mm_law.limit_for(ctx.limit_mm_per_prompt, m) > 0}

    def notes(self) -> tuple[str, ...]:
        return (*super().notes(), "encoder-free: the patch and audio-frame embedders are built whatever "
                "--limit-mm-per-prompt says")
