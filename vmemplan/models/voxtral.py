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

Voxtral Realtime (``VoxtralRealtimeGeneration``, e.g. mistralai/Voxtral-Mini-4B-Realtime-2602;
vllm/model_executor/models/voxtral_realtime.py, 0.33.0) subclasses that model; its params.json
carries a causal encoder (``_remap_mistral_audio_args``: ``is_causal``, ``block_pool_size`` =
``downsample_factor``, rope positions, a ``sliding_window``) and a Mistral decoder with
``ada_rms_norm_t_cond``:

* ``VoxtralEncoderModel`` builds whisper_causal.py::WhisperCausalEncoder instead
  (:func:`vmemplan.models.whisper_encoder.whisper_causal_encoder`), the same ``mel_filters`` and
  adapter.  Its layers are KV-cached attention layers (``WhisperCausalAttentionWithBlockPooling``):
  a ``SlidingWindowSpec`` with the encoder's KV heads / TP and ``encoder_head_dim``,
  ``tokens_per_state`` = 1 / ``block_pool_size`` (a block of ``block_size`` LM positions holds
  ``block_size · block_pool_size`` encoder frames) and the window in pooled units,
  ``cdiv(sliding_window, block_pool_size) + 1`` — while audio is allowed (the tower is built);
* the decoder (mistral.py::MistralForCausalLM on ``text_config``, vmemplan's MistralWindowed) has
  in every layer ``ada_rms_norm_t_cond``: ColumnParallelLinear(hidden → ada_rms_norm_t_cond_dim) and
  RowParallelLinear back, no biases;
* ``time_embedding`` (``TimeEmbedding``): a float32 ``inv_freq`` buffer of hidden / 2 entries, made
  outside the tower (whatever the modality limits).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.core.kv_specs import SlidingWindowSpec
from vmemplan.core.units import cdiv
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.audio_towers import _dims, _int, audio_config
from vmemplan.models.base import register
from vmemplan.models.dense import LlamaLike
from vmemplan.models.dense_blocks import kv_spec_fields
from vmemplan.models.mistral_windowed import MistralWindowed
from vmemplan.models.multimodal import FirstStageTower
from vmemplan.models.qwen_audio import _AudioTower
from vmemplan.models.whisper_encoder import whisper_causal_encoder, whisper_encoder

__all__ = ["Voxtral", "VoxtralRealtime"]

_ENCODER = "whisper_encoder.whisper_encoder"


class _VoxtralTower(FirstStageTower, _AudioTower):
    """The Voxtral encoder (bidirectional or causal), ``mel_filters`` and the adapter."""

    @property
    def patches_per_token(self) -> int:
        """Encoder positions per LM token: the adapter merges ``downsample_factor`` frames."""
        cfg = self.config  # type: ignore[attr-defined]
        return _int(audio_config(cfg.raw, cfg.architecture), "downsample_factor", 4)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        ac = audio_config(config.raw, config.architecture)
        d, mels, h = _dims(ac)[0], _dims(ac)[4], config.hidden_size
        tp = ctx.tensor_parallel_size
        encoder = (whisper_causal_encoder(ac, tp, _ENCODER) if ac.get("is_causal")
                   else whisper_encoder(ac, tp, _ENCODER, fp32_positions=True))
        return encoder + [
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



@register
class Voxtral(_VoxtralTower, LlamaLike):
    """Voxtral: Llama on ``text_config`` + the fp32-positioned Whisper encoder and its adapter."""

    architectures = ("VoxtralForConditionalGeneration",)


@register
class VoxtralRealtime(_VoxtralTower, MistralWindowed):
    """Voxtral Realtime: Mistral (with ada-RMSNorm conditioning) on ``text_config`` + the causal,
    KV-cached Whisper encoder and the adapter (see the module docstring)."""

    architectures = ("VoxtralRealtimeGeneration",)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        text, tp = self.config.text, ctx.tensor_parallel_size
        h, n = self.config.hidden_size, self.rank_span(ctx).layers
        out = super().weight_tensors(ctx)
        if text.get("ada_rms_norm_t_cond") and n:
            dim = int(text.get("ada_rms_norm_t_cond_dim") or 0) // tp
            out += [WeightTensor("model.layers.ada_rms_norm_t_cond.0", "linear", dim, h, n),
                    WeightTensor("model.layers.ada_rms_norm_t_cond.2", "linear", h, dim, n)]
        return out + [WeightTensor("time_embedding.inv_freq", "buffer", h // 2, 1, dtype="float32")]

    def kv_cache_specs(self, ctx: GraphContext) -> dict[str, Any]:
        """The decoder's specs and, while the tower is built on this stage, one pooled sliding
        window spec per encoder layer (WhisperCausalAttentionWithBlockPooling.get_kv_cache_spec)."""
        specs = super().kv_cache_specs(ctx)
        ac = audio_config(self.config.raw, self.config.architecture)
        if not (ac.get("is_causal") and ctx.pipeline_rank == 0 and self.tower_built(ctx)):
            return specs
        d, layers, heads = _dims(ac)[:3]
        pool, window = _int(ac, "block_pool_size", 1), _int(ac, "sliding_window", 0)
        common = kv_spec_fields(ctx, num_kv_heads=heads // ctx.tensor_parallel_size,
                                head_size=_int(ac, "encoder_head_dim", d // heads))
        spec = SlidingWindowSpec(sliding_window=cdiv(window, pool) + 1, **{**common, "tokens_per_state": Fraction(1, pool)})
        return specs | {f"{_ENCODER}.layers.{i}.layers.self_attn.attn": spec for i in range(layers)}
