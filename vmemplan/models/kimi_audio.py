"""Kimi-Audio (``MoonshotKimiaForCausalLM``, e.g. moonshotai/Kimi-Audio-7B-Instruct): vLLM's
Whisper encoder on the checkpoint's ``whisper-large-v3`` sub-config and the VQ adaptor in front
of a Qwen2 decoder built on the top-level config.

vllm/model_executor/models/kimi_audio.py (0.33.0), ``KimiAudioForConditionalGeneration.__init__``:

* under ``_mark_tower_model(vllm_config, "audio")``:

  - ``audio_tower`` = ``KimiAudioWhisperEncoder``: whisper.py::WhisperEncoder (``init_in_fp32``
    False) on ``WhisperConfig.from_pretrained(model, subfolder="whisper-large-v3")`` — the
    checkpoint's own copy of openai/whisper-large-v3, a file config.json does not carry; vmemplan
    prices that published shape (:data:`WHISPER_LARGE_V3`: 1280 wide, 32 layers, 20 heads, FFN
    5120, 128 mel bins, 1,500 positions), or a ``whisper_config`` mapping where a config holds one.
    Tensors: :func:`vmemplan.models.whisper_encoder.whisper_encoder`, split over TP;
  - ``multi_modal_projector`` = ``KimiAudioMultiModalProjector``: ``vq_adaptor_layers_0``
    nn.Linear(``kimia_adaptor_input_dim`` (default 5120) → hidden, biased), ``vq_adaptor_layers_3``
    nn.Linear(hidden → hidden, biased), ``vq_adaptor_layers_4`` nn.LayerNorm(hidden), whole on
    every rank;

* under ``_mark_language_model``: ``init_vllm_registered_model`` on the same config with
  ``architectures=["Qwen2ForCausalLM"]`` (the checkpoint's MIMO audio-output layers, ``mimo_*``,
  map to None and are not built).

No ``supports_encoder_tp_data``: ``--mm-encoder-tp-mode data`` runs as ``weights``.  The dummy
audio (KimiAudioDummyInputsBuilder) is min(chunk_length, 30) s at 16 kHz: 3,000 mel frames, which
``_get_feat_extract_output_lengths`` turns into 13 tokens per 100 frames: 390 tokens, each
standing for 4 encoder positions (the adaptor's 5,120 inputs are four 1,280-wide frames).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.audio_towers import _dims, _int
from vmemplan.models.base import register
from vmemplan.models.dense import Qwen2
from vmemplan.models.multimodal import FirstStageTower
from vmemplan.models.qwen_audio import WHISPER_MEL_FRAMES, _AudioTower
from vmemplan.models.whisper_encoder import whisper_encoder

__all__ = ["KimiAudio", "WHISPER_LARGE_V3"]

#: openai/whisper-large-v3's encoder keys (the checkpoint's ``whisper-large-v3/config.json``)
WHISPER_LARGE_V3: Mapping[str, int] = {
    "d_model": 1280, "encoder_layers": 32, "encoder_attention_heads": 20, "encoder_ffn_dim": 5120,
    "num_mel_bins": 128, "max_source_positions": 1500,
}


def _whisper(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    wc = raw.get("whisper_config")
    return wc if isinstance(wc, Mapping) else WHISPER_LARGE_V3


@register
class KimiAudio(FirstStageTower, _AudioTower, Qwen2):
    """Kimi-Audio: Qwen2 on the top-level config + the whisper-large-v3 encoder and the VQ adaptor."""

    architectures = ("MoonshotKimiaForCausalLM",)
    patches_per_token = 4  # four 1,280-wide encoder frames per adaptor input

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        d, _n, _h, ffn, _m, _p = _dims(_whisper(config.raw))
        return d, ffn

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        h = config.hidden_size
        adaptor_in = _int(config.raw, "kimia_adaptor_input_dim", 5120)
        return whisper_encoder(_whisper(config.raw), ctx.tensor_parallel_size) + [
            WeightTensor("multi_modal_projector.vq_adaptor_layers_0", "encoder", h, adaptor_in),
            WeightTensor("multi_modal_projector.vq_adaptor_layers_3", "encoder", h, h),
            WeightTensor("multi_modal_projector.vq_adaptor_layers_0/3.bias+layers_4", "encoder", h, 1, 4),
        ]

    def clip_tokens(self) -> int:
        """The 30 s dummy clip: 13 tokens per 100 mel frames (kimi_audio.py::_get_feat_extract_output_lengths)."""
        return WHISPER_MEL_FRAMES // 100 * 13

