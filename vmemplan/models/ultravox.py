"""Ultravox (``UltravoxModel``, e.g. fixie-ai/ultravox-v0_5-llama-3_2-1b): vLLM's Whisper encoder
and a frame-stacking projector in front of the Llama decoder of ``text_config``.

vllm/model_executor/models/ultravox.py (0.33.0), ``UltravoxModel.__init__``:

* under ``_mark_tower_model(vllm_config, "audio")``: ``audio_tower`` =
  ``UltravoxWhisperEncoder`` (whisper.py::WhisperEncoder with ``enable_pp=False``; its tensors:
  :func:`vmemplan.models.whisper_encoder.whisper_encoder`, split over TP) and
  ``multi_modal_projector``:

  - ``num_projector_layers == 0`` (v0.5): ``UltravoxFeedForwardProjector``: ``ln_pre``
    RMSNorm(d_model · stack_factor), ``linear_1`` ReplicatedLinear(d_model · stack_factor →
    ``hidden_size``, no bias), SwiGLU (``projector_act`` "swiglu" halves the width), ``linear_2``
    ReplicatedLinear(→ text hidden, no bias) and one RMSNorm: ``ln_mid`` on the middle width when
    ``projector_ln_mid``, else ``ln_post`` on the text width;
  - else ``UltravoxTransformerProjector``: ``ln_pre``, ``linear_in`` ReplicatedLinear(d_model ·
    stack_factor → d_model, biased), ``embed_positions`` nn.Embedding(max_source_positions,
    d_model), ``num_projector_layers`` × whisper.py::WhisperEncoderLayer (split over TP),
    ``ln_post`` RMSNorm(d_model), ``linear_out`` ReplicatedLinear(d_model → text hidden, biased);

* under ``_mark_language_model``: ``init_vllm_registered_model`` on ``wrapped_model_config`` (the
  ``text_config``; LlamaForCausalLM for the Llama-3 Ultravox releases — the class planned here).

The model does not declare ``supports_encoder_tp_data``: ``--mm-encoder-tp-mode data`` runs as
``weights``.  The dummy audio (UltravoxDummyInputsBuilder) is ``chunk_length`` (30 s) × 16
(``_MAX_ENCODER_BATCH_SIZE``) long; the processor cuts it into 16 chunks of
``max_source_positions`` encoder frames, each giving ⌈max_source_positions / stack_factor⌉ tokens
(``UltravoxModel._get_max_tokens_per_chunk``: 188 for Whisper's 1,500).
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.audio_towers import _dims, _int, audio_config
from vmemplan.models.base import register
from vmemplan.models.dense import LlamaLike
from vmemplan.models.multimodal import FirstStageTower
from vmemplan.models.qwen_audio import _AudioTower
from vmemplan.models.whisper_encoder import whisper_encoder, whisper_encoder_layers

__all__ = ["Ultravox", "ultravox_projector"]

#: ultravox.py::_MAX_ENCODER_BATCH_SIZE: chunks in one dummy audio item
DUMMY_CHUNKS = 16


def _proj(name: str, rows: int, cols: int, bias: bool) -> list[WeightTensor]:
    out = [WeightTensor(f"multi_modal_projector.{name}", "encoder", rows, cols)]
    return out + [WeightTensor(f"multi_modal_projector.{name}.bias", "encoder", rows, 1)] if bias else out


def ultravox_projector(raw: Any, ac: Any, text_hidden: int, tp: int) -> list[WeightTensor]:
    """The projector's tensors (feed-forward or transformer, see the module docstring)."""
    d, _n, _h, _f, _m, positions = _dims(ac)
    dim_in = d * _int(raw, "stack_factor", 8)
    out = [WeightTensor("multi_modal_projector.ln_pre", "encoder", dim_in, 1)]
    layers = _int(raw, "num_projector_layers", 0)
    if layers > 0:
        return out + [
            *_proj("linear_in", d, dim_in, True),
            WeightTensor("multi_modal_projector.embed_positions", "encoder", positions, d),
            *whisper_encoder_layers(ac, layers, tp, "multi_modal_projector"),
            WeightTensor("multi_modal_projector.ln_post", "encoder", d, 1),
            *_proj("linear_out", text_hidden, d, True),
        ]
    hidden = _int(raw, "hidden_size", 4096)
    mid = hidden // 2 if raw.get("projector_act", "swiglu") == "swiglu" else hidden
    norm = (WeightTensor("multi_modal_projector.ln_mid", "encoder", mid, 1) if raw.get("projector_ln_mid")
            else WeightTensor("multi_modal_projector.ln_post", "encoder", text_hidden, 1))
    return out + [*_proj("linear_1", hidden, dim_in, False), *_proj("linear_2", text_hidden, mid, False), norm]


@register
class Ultravox(FirstStageTower, _AudioTower, LlamaLike):
    """Ultravox: Llama on ``text_config`` + vLLM's Whisper encoder and the Ultravox projector."""

    architectures = ("UltravoxModel",)

    @property
    def patches_per_token(self) -> int:
        """Encoder positions per LM token: the projector stacks ``stack_factor`` frames."""
        return _int(self.config.raw, "stack_factor", 8)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        ac = audio_config(config.raw, config.architecture)
        tp = ctx.tensor_parallel_size
        return whisper_encoder(ac, tp) + ultravox_projector(config.raw, ac, config.hidden_size, tp)

    def clip_tokens(self) -> int:
        """One dummy item: 16 chunks × ⌈max_source_positions / stack_factor⌉."""
        positions = _dims(audio_config(self.config.raw, self.config.architecture))[5]
        stack = _int(self.config.raw, "stack_factor", 8)
        return DUMMY_CHUNKS * -(-positions // stack)

