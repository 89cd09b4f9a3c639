"""MOSS-Transcribe-Diarize (``MossTranscribeDiarizeForConditionalGeneration``): vLLM's Whisper encoder
and a time-merging MLP adaptor in front of a Qwen3 decoder on ``text_config``.

vllm/model_executor/models/moss_transcribe_diarize.py (0.33.0),
``MossTranscribeDiarizeForConditionalGeneration.__init__`` (config:
vllm/transformers_utils/configs/moss_transcribe_diarize.py::MossTranscribeDiarizeConfig, whose
``audio_config`` is a WhisperConfig and whose defaults are Qwen3-0.6B + the Whisper-medium encoder):

* under ``_mark_tower_model(vllm_config, "audio")``:

  - ``whisper_encoder`` = ``MossTranscribeDiarizeWhisperEncoder``, whisper.py::WhisperEncoder on
    ``audio_config`` (its tensors: :func:`vmemplan.models.whisper_encoder.whisper_encoder`, split over
    TP).  Built with ``enable_pp=True``: ``make_layers`` keeps only the pipeline stage's share of the
    encoder layers (get_pp_indices), and the tower exists on the first stage only, so under PP the
    first stage holds its share of the encoder layers (the rest are PPMissingLayer);
  - ``vq_adaptor`` = ``MossTranscribeDiarizeVQAdaptor``: nn.Linear(``adaptor_input_dim`` (d_model ·
    ``audio_merge_size`` unless set) → text hidden) and nn.Linear(hidden → hidden), biased, and an
    nn.LayerNorm(hidden), whole on every rank;

* under ``_mark_language_model``: ``init_vllm_registered_model`` on ``text_config`` with
  ``architectures=["Qwen3ForCausalLM"]`` (the config's ``tie_word_embeddings``, True by default, is
  written into the text config).

No ``supports_encoder_tp_data``; one audio per prompt.  The dummy audio is ``MAX_AUDIO_DURATION_S``
(90 min) long; each 30 s Whisper chunk gives ⌊(480,000 − 1) / (hop 160 · conv stride 2 ·
``audio_merge_size``)⌋ + 1 tokens (375 for a merge of 4), and the item is capped at the context
length (MossTranscribeDiarizeProcessingInfo.get_mm_max_tokens_per_item: ``min(seq_len, ...)``).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.audio_towers import _dims, _int, audio_config
from vmemplan.models.base import pp_layer_range, register
from vmemplan.models.dense import Qwen3
from vmemplan.models.multimodal import FirstStageTower
from vmemplan.models.qwen_audio import _AudioTower
from vmemplan.models.whisper_encoder import whisper_encoder

__all__ = ["MossTranscribeDiarize", "moss_audio_tokens"]

#: moss_transcribe_diarize.py::MAX_AUDIO_DURATION_S; WhisperFeatureExtractor's defaults (16 kHz, 30 s, hop 160)
MAX_AUDIO_S, SAMPLE_RATE, CHUNK_SAMPLES, HOP, CONV_STRIDE = 90 * 60, 16000, 480000, 160, 2


def moss_audio_tokens(num_samples: int, merge: int) -> int:
    """moss_transcribe_diarize.py::_compute_total_audio_tokens with the default feature extractor."""
    stride = HOP * CONV_STRIDE * merge
    return sum((min(CHUNK_SAMPLES, num_samples - start) - 1) // stride + 1
               for start in range(0, num_samples, CHUNK_SAMPLES))


@register
class MossTranscribeDiarize(FirstStageTower, _AudioTower, Qwen3):
    """MOSS-Transcribe-Diarize: Qwen3 on ``text_config`` + the Whisper encoder and the VQ adaptor."""

    architectures = ("MossTranscribeDiarizeForConditionalGeneration",)

    def _merge(self) -> int:
        return _int(self.config.raw, "audio_merge_size", 4)

    @property
    def patches_per_token(self) -> int:
        """Encoder positions per LM token: the adaptor merges ``audio_merge_size`` of them."""
        return self._merge()

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        ac = audio_config(config.raw, config.architecture)
        d, n = _dims(ac)[:2]
        start, end = pp_layer_range(n, ctx.pipeline_parallel_size, 0)
        h = config.hidden_size
        adaptor_in = _int(config.raw, "adaptor_input_dim", d * _int(config.raw, "audio_merge_size", 4))
        return whisper_encoder({**ac, "encoder_layers": end - start}, ctx.tensor_parallel_size, "whisper_encoder") + [
            WeightTensor("vq_adaptor.layers.0", "encoder", h, adaptor_in),
            WeightTensor("vq_adaptor.layers.2", "encoder", h, h),
            WeightTensor("vq_adaptor.layers.0+2.bias+layers.3", "encoder", h, 1, 4),  # 2 biases, LayerNorm w + b
        ]

    def clip_tokens(self) -> int:
        return moss_audio_tokens(MAX_AUDIO_S * SAMPLE_RATE, self._merge())

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        """The 90 min dummy item, capped at the context length."""
        if mm_law.limit_for(ctx.limit_mm_per_prompt, "audio") <= 0:
            return {}
        return {"audio": min(int(ctx.max_model_len), self.clip_tokens())}

