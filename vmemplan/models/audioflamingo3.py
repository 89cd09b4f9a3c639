"""Audio Flamingo 3 (``AudioFlamingo3ForConditionalGeneration``, e.g. nvidia/audio-flamingo-3-hf):
transformers' Qwen2-Audio encoder and a two-linear projector in front of a Qwen2 decoder.

vllm/model_executor/models/audioflamingo3.py (0.33.0),
``AudioFlamingo3ForConditionalGeneration.__init__``:

* under ``_mark_tower_model(vllm_config, "audio")``: ``audio_tower`` = ``AudioFlamingo3Encoder``,
  a subclass of transformers' ``Qwen2AudioEncoder`` (plain torch modules, whole on every rank:
  :func:`vmemplan.models.audio_towers.qwen2_audio_encoder`; its AvgPool1d has no tensors) on
  ``audio_config`` (transformers' AudioFlamingo3EncoderConfig, whose ``hidden_size`` /
  ``num_hidden_layers`` / ``num_attention_heads`` / ``intermediate_size`` are Whisper's
  ``d_model`` / ``encoder_layers`` / ``encoder_attention_heads`` / ``encoder_ffn_dim``), and
  ``multi_modal_projector`` = ``AudioFlamingo3MultiModalProjector``: ``linear_1`` nn.Linear(audio
  hidden → text hidden) and ``linear_2`` nn.Linear(text hidden → text hidden), biased when
  ``projector_bias`` (AudioFlamingo3Config default True);
* under ``_mark_language_model``: ``init_vllm_registered_model`` on ``text_config`` with
  ``architectures=["Qwen2ForCausalLM"]``.

No ``supports_encoder_tp_data``.  The dummy audio (AudioFlamingo3DummyInputsBuilder) is the
processor's ``max_audio_len`` (600 s) long: 20 windows of 30 s, 750 tokens each
(AudioFlamingo3Processor._get_audio_token_length: conv stride 2, then the 2-wide pool).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.audio_towers import audio_config, qwen2_audio_encoder, whisper_output_tokens
from vmemplan.models.base import register
from vmemplan.models.dense import Qwen2
from vmemplan.models.multimodal import FirstStageTower
from vmemplan.models.qwen_audio import WHISPER_MEL_FRAMES, _AudioTower

__all__ = ["AudioFlamingo3", "whisper_keys"]

#: AudioFlamingo3Processor(max_audio_len=600) over the 30 s WhisperFeatureExtractor chunk
MAX_AUDIO_S, CHUNK_S = 600, 30

_WHISPER_NAMES = {"hidden_size": "d_model", "num_hidden_layers": "encoder_layers",
                  "num_attention_heads": "encoder_attention_heads", "intermediate_size": "encoder_ffn_dim"}


def whisper_keys(ac: Mapping[str, Any]) -> dict[str, Any]:
    """``ac`` with transformers' attribute_map names (hidden_size, ...) spelt as Whisper's
    (d_model, ...), which the audio tower shape lists read."""
    out = dict(ac)
    for name, whisper in _WHISPER_NAMES.items():
        if name in ac and whisper not in ac:
            out[whisper] = ac[name]
    return out


@register
class AudioFlamingo3(FirstStageTower, _AudioTower, Qwen2):
    """Audio Flamingo 3: Qwen2 on ``text_config`` + the Qwen2-Audio encoder and its projector."""

    architectures = ("AudioFlamingo3ForConditionalGeneration",)
    patches_per_token = 2  # 1,500 encoder positions per 750 tokens (AvgPool1d(2, 2))

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        ac = whisper_keys(audio_config(config.raw, config.architecture))
        return int(ac.get("d_model", 1280)), int(ac.get("encoder_ffn_dim", 5120))

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        ac = whisper_keys(audio_config(config.raw, config.architecture))
        d, h = int(ac.get("d_model", 1280)), config.hidden_size
        out = qwen2_audio_encoder(ac) + [WeightTensor("multi_modal_projector.linear_1", "encoder", h, d),
                                         WeightTensor("multi_modal_projector.linear_2", "encoder", h, h)]
        if config.raw.get("projector_bias", True):
            out.append(WeightTensor("multi_modal_projector.linear_1+linear_2.bias", "encoder", h, 1, 2))
        return out

    def clip_tokens(self) -> int:
        return MAX_AUDIO_S // CHUNK_S * whisper_output_tokens(WHISPER_MEL_FRAMES)

