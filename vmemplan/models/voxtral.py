"""Voxtral (``VoxtralForConditionalGeneration``, e.g. mistralai/Voxtral-Mini-3B-2507): vLLM's
Whisper encoder and a two-linear adapter in front of the Llama decoder of ``text_config``.

vllm/model_executor/models/voxtral.py (0.33.0), ``VoxtralForConditionalGeneration.__init__``:

* under ``_mark_language_model``: ``init_vllm_registered_model`` on ``text_config``
  (LlamaForCausalLM: the Mistral-format ``params.json`` becomes a Llama text config in
  vllm/transformers_utils/configs/mistral.py::_remap_mistral_audio_args);
* under ``_mark_tower_model(vllm_config, "audio")``:

  - ``whisper_encoder`` = ``VoxtralEncoderModel``: whisper.py::WhisperEncoder built with
    ``init_in_fp32=True`` (non-causal ``audio_config``; :func:`vmemplan.models.whisper_encoder.
    whisper_encoder` with the float32 position table, split over TP) and its ``mel_filters``
    buffer, float32 [1 + window_size // 2, num_mel_bins] (``mel_filter_bank``);
  - ``audio_language_adapter`` = ``AudioLanguageAdapter``: ``w_in`` nn.Linear(d_model ·
    downsample_factor → text hidden) and ``w_out`` nn.Linear(text hidden → text hidden), no
    biases, whole on every rank.

No ``supports_encoder_tp_data``: ``--mm-encoder-tp-mode data`` runs as ``weights``.
VoxtralProcessingInfo.get_mm_max_tokens_per_item answers ``max_model_len`` audio tokens.
The causal (realtime) encoder, ``VoxtralRealtimeGeneration``, is another architecture.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.audio_towers import _dims, _int, audio_config
from vmemplan.models.base import register
from vmemplan.models.dense import LlamaLike
from vmemplan.models.qwen_audio import _AudioTower
from vmemplan.models.whisper_encoder import whisper_encoder

__all__ = ["Voxtral"]


@register
class Voxtral(_AudioTower, LlamaLike):
    """Voxtral: Llama on ``text_config`` + the fp32-positioned Whisper encoder and its adapter."""

    architectures = ("VoxtralForConditionalGeneration",)

    @property
    def patches_per_token(self) -> int:
        """Encoder positions per LM token: the adapter merges ``downsample_factor`` frames."""
        return _int(audio_config(self.config.raw, self.config.architecture), "downsample_factor", 4)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        ac = audio_config(config.raw, config.architecture)
        d, mels, h = _dims(ac)[0], _dims(ac)[4], config.hidden_size
        return whisper_encoder(ac, ctx.tensor_parallel_size, "whisper_encoder.whisper_encoder", fp32_positions=True) + [
            WeightTensor("whisper_encoder.mel_filters", "buffer", 1 + _int(ac, "window_size", 400) // 2, mels,
                         dtype="float32"),
            WeightTensor("audio_language_adapter.w_in", "encoder", h, d * _int(ac, "downsample_factor", 4)),
            WeightTensor("audio_language_adapter.w_out", "encoder", h, h),
        ]

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """``max_model_len`` tokens per audio (VoxtralProcessingInfo.get_max_audio_tokens)."""
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "audio") <= 0:
            return {}
        return {"audio": ctx.max_model_len}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        if ctx.pipeline_rank == 0:
            out += self.tower_tensors(self.config, ctx)
        return out
