"""Qwen audio-language models: a Whisper-style audio tower (:mod:`vmemplan.models.audio_towers`)
in front of a Qwen decoder vmemplan plans.

* ``Qwen2AudioForConditionalGeneration`` (vllm/model_executor/models/qwen2_audio.py, 0.33.0):
  ``audio_tower`` = transformers' Qwen2AudioEncoder on ``audio_config`` and
  ``multi_modal_projector.linear`` nn.Linear(d_model → text hidden, bias), both under
  ``_mark_tower_model(..., "audio")``; ``language_model`` = Qwen2ForCausalLM on ``text_config``.
  The tower is a plain torch module (whole on every rank; the model does not declare
  ``supports_encoder_tp_data``, so ``--mm-encoder-tp-mode data`` falls back to ``weights``).
* ``Qwen2_5OmniModel`` / ``Qwen2_5OmniForConditionalGeneration`` (both map to
  qwen2_5_omni_thinker.py::Qwen2_5OmniThinkerForConditionalGeneration): the thinker only, on
  ``thinker_config`` (the talker and token2wav weights map to None; vmemplan reads the thinker's
  keys through model_config's flattening): ``audio_tower`` = transformers' Qwen2_5OmniAudioEncoder
  (under ``_mark_tower_model(..., "audio")``), ``visual`` = qwen2_5_vl.py::Qwen2_5_VisionTransformer
  (under ``{"image", "video"}``, split over TP like the decoder: no ``supports_encoder_tp_data``),
  ``language_model`` = Qwen2ForCausalLM on ``text_config`` with M-RoPE;
* ``Qwen3ASRForConditionalGeneration`` (qwen3_asr.py): the thinker on ``thinker_config``:
  ``audio_tower`` = qwen3_omni_moe_thinker.py::Qwen3OmniMoeAudioEncoder (its proj1 / proj2 are
  the projector; layers split over TP when TP divides the encoder heads), ``language_model`` =
  Qwen3ForCausalLM on ``text_config`` (M-RoPE from its rope_scaling);
* a tower whose modality has ``--limit-mm-per-prompt`` 0 is not built
  (interfaces.py::SupportsMultiModal._mark_tower_model), nor on a pipeline stage after the first.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.audio_towers import (
    audio_config,
    qwen2_audio_encoder,
    qwen3_omni_audio_encoder,
    whisper_output_tokens,
)
from vmemplan.models.base import register
from vmemplan.models.dense import Qwen2, Qwen3
from vmemplan.models.multimodal import FirstStageTower, VisionEncoderMixin, _QwenVLBase
from vmemplan.models.vision_towers import _uses_mrope, _vision, mrope_cache_positions, qwen2_5_vl_tower

__all__ = ["Qwen2Audio", "Qwen2_5OmniThinker", "Qwen3ASR"]

#: WhisperFeatureExtractor of the Qwen2-Audio processor: 30 s chunks at 16 kHz, hop 160
#: (Qwen2AudioProcessingInfo.get_mm_max_tokens_per_item: 3,000 mel frames → 750 tokens)
WHISPER_MEL_FRAMES = 30 * 16000 // 160


class _AudioTower(VisionEncoderMixin):
    """An audio-only tower: built while ``audio`` is allowed per prompt."""

    modalities = ("audio",)

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        ac = audio_config(config.raw, config.architecture)
        return int(ac.get("d_model", 1280)), int(ac.get("encoder_ffn_dim", 5120))

    def clip_tokens(self) -> int:  # pragma: no cover - each tower's
        raise NotImplementedError

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """One dummy 30 s clip (WHISPER_MEL_FRAMES mel frames), while audio is allowed."""
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "audio") <= 0:
            return {}
        return {"audio": self.clip_tokens()}



@register
class Qwen2Audio(FirstStageTower, _AudioTower, Qwen2):
    """Qwen2-Audio: Qwen2 on ``text_config`` + the Qwen2AudioEncoder and its linear projector."""

    architectures = ("Qwen2AudioForConditionalGeneration",)
    patches_per_token = 2  # the encoder runs at 1,500 positions for 750 tokens (AvgPool1d(2, 2))

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        ac = audio_config(config.raw, config.architecture)
        d = int(ac.get("d_model", 1280))
        h = config.hidden_size
        return qwen2_audio_encoder(ac) + [WeightTensor("multi_modal_projector.linear", "encoder", h, d),
                                          WeightTensor("multi_modal_projector.linear.bias", "encoder", h, 1)]

    def clip_tokens(self) -> int:
        return whisper_output_tokens(WHISPER_MEL_FRAMES)



@register
class Qwen2_5OmniThinker(_QwenVLBase, Qwen2):
    """Qwen2.5-Omni's thinker: Qwen2 with M-RoPE + the Qwen2.5-VL vision tower + the
    Qwen2_5OmniAudioEncoder (its own ``proj`` to the text width; no separate projector)."""

    architectures = ("Qwen2_5OmniModel", "Qwen2_5OmniForConditionalGeneration")
    modalities = ("audio", "image", "video")
    supports_encoder_tp_data = False  # the thinker does not declare it (unlike Qwen2.5-VL)

    def _on(self, ctx: GraphContext, *modalities: str) -> bool:
        return any(mm_law.limit_for(ctx.limit_mm_per_prompt, m) > 0 for m in modalities)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        out: list[WeightTensor] = []
        if self._on(ctx, "audio"):
            out += qwen2_audio_encoder(audio_config(config.raw, config.architecture), omni=True)
        if self._on(ctx, "image", "video"):
            out += qwen2_5_vl_tower(_vision(config), ctx.tensor_parallel_size)
        return out

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """Qwen2_5OmniThinkerProcessingInfo.get_mm_max_tokens_per_item: Qwen2.5-VL's image /
        video figures and Qwen2-Audio's 750 tokens per 30 s clip."""
        out = super().max_tokens_per_item(config, ctx)
        if self._on(ctx, "audio"):
            out["audio"] = whisper_output_tokens(WHISPER_MEL_FRAMES)
        return out


    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = self._with_mrope(super().weight_tensors(ctx))
        if ctx.pipeline_rank == 0:
            out += self.tower_tensors(self.config, ctx)
        return out


def qwen3_audio_tokens(mel_frames: int) -> int:
    """Qwen3-Omni / Qwen3-ASR encoder output length (qwen3_omni_moe_thinker.py::
    _get_feat_extract_output_lengths): 13 tokens per 100-frame window plus the remainder's
    three stride-2 convolutions."""
    rest = mel_frames % 100
    feat = (rest - 1) // 2 + 1
    return ((feat - 1) // 2 + 1 - 1) // 2 + 1 + (mel_frames // 100) * 13


@register
class Qwen3ASR(_AudioTower, Qwen3):
    """Qwen3-ASR: Qwen3 (M-RoPE) on ``text_config`` + the Qwen3-Omni audio encoder."""

    architectures = ("Qwen3ASRForConditionalGeneration",)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return qwen3_omni_audio_encoder(audio_config(config.raw, config.architecture), ctx.tensor_parallel_size)

    def clip_tokens(self) -> int:
        """The 30 s dummy clip (Qwen3ASRDummyInputsBuilder): 3,000 mel frames → 390 tokens."""
        return qwen3_audio_tokens(WHISPER_MEL_FRAMES)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        if _uses_mrope(self.config):  # MRotaryEmbedding cache: max_position x 4 rows (get_rope's default factor)
            rows, dim = mrope_cache_positions(self.config)
            out = [WeightTensor(t.name, t.kind, rows, dim) if t.name == "rotary_emb.cos_sin_cache" else t for t in out]
        if ctx.pipeline_rank == 0:
            out += self.tower_tensors(self.config, ctx)
        return out
