"""MiniCPM-o (``MiniCPMO``, e.g. openbmb/MiniCPM-o-2_6): MiniCPM-V (:mod:`vmemplan.models.minicpmv`)
plus a Whisper audio encoder and its projector.

vllm/model_executor/models/minicpmo.py (0.33.0): ``MiniCPMO.__new__`` dispatches on ``config.version``
(absent: 2.6) to ``MiniCPMO2_6`` (MiniCPMV2_6: Qwen2ForCausalLM, Resampler2_5) or ``MiniCPMO4_5``
(MiniCPMV4_5: Qwen3ForCausalLM, Resampler4_5); other versions are refused.  Both add, under
``_mark_tower_model(vllm_config, "audio")`` (``MiniCPMOBaseModel.init_audio_module``, built twice:
the subclass's second ``apm`` replaces the base's, so one copy is held):

* ``apm`` = ``MiniCPMWhisperEncoder`` (transformers' ``WhisperEncoder`` on ``audio_config``, a
  WhisperConfig: conv1 / conv2 Conv1d, the ``embed_positions`` nn.Embedding(max_source_positions,
  d_model), ``encoder_layers`` layers of WhisperAttention (q / v / out biased, k unbiased), two
  LayerNorms, fc1 / fc2, and the final ``layer_norm``), plain torch modules whole on every rank —
  the same shapes as :func:`vmemplan.models.audio_towers.qwen2_audio_encoder`;
* ``audio_projection_layer`` = ``MultiModalProjector``: ``linear1`` nn.Linear(encoder_ffn_dim / 4 →
  text hidden) and ``linear2`` (hidden → hidden), both biased; the AvgPool1d has no tensors.

The vision side (``vpm`` + ``resampler``, under ``{"image", "video"}``) and the language model are
MiniCPM-V's.  Encoder budget for audio: ``MiniCPMOProcessingInfo.get_max_audio_tokens``, 30 chunks of
``((100 - 1) // 2 + 1 - audio_pool_step) // audio_pool_step + 1`` tokens.

Remote code (``minicpmo``): the oracle reads it through bench/oracle/shims_minicpmo.py.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.laws import multimodal as mm_law
from vmemplan.models.audio_towers import audio_config, qwen2_audio_encoder
from vmemplan.models.base import Adapter, adapter_class, register
from vmemplan.models.minicpmv import _LM_BY_VERSION, _MiniCPMVTower

__all__ = ["MiniCPMO", "minicpmo_audio_tokens"]


def minicpmo_version(raw: Any) -> tuple[int, ...]:
    """minicpmo.py::MiniCPMO.__new__: the first two parts of ``version``, (2, 6) when absent."""
    v = raw.get("version")
    return (2, 6) if v is None else tuple(int(x) for x in str(v).split(".")[:2])


def minicpmo_audio_tokens(pool_step: int) -> int:
    """MiniCPMOProcessingInfo.get_max_audio_tokens: 30 one-second chunks of 100 fbank frames."""
    cnn = (100 - 1) // 2 + 1
    return ((cnn - pool_step) // pool_step + 1) * 30


class _MiniCPMOTower(_MiniCPMVTower):
    modalities = ("image", "video", "audio")  # type: ignore[assignment]

    def version(self) -> tuple[int, ...]:
        return minicpmo_version(self.config.raw)  # type: ignore[attr-defined]

    def _on(self, ctx: GraphContext, *modalities: str) -> bool:
        return any(mm_law.limit_for(ctx.limit_mm_per_prompt, m) > 0 for m in modalities)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        out = super().vision_weight_tensors(config, ctx) if self._on(ctx, "image", "video") else []
        if self._on(ctx, "audio"):
            ac = audio_config(config.raw, config.architecture)
            a = int(ac.get("encoder_ffn_dim", 4096)) // 4
            h = config.hidden_size
            out += qwen2_audio_encoder(ac, prefix="apm") + [
                WeightTensor("audio_projection_layer.linear1", "encoder", h, a),
                WeightTensor("audio_projection_layer.linear2", "encoder", h, h),
                WeightTensor("audio_projection_layer.linear1+linear2.bias", "encoder", h, 1, 2),
            ]
        return out

    def max_tokens_per_item(self, config: Any, ctx: GraphContext) -> dict[str, int]:
        out = super().max_tokens_per_item(config, ctx)
        if self._on(ctx, "audio"):
            out["audio"] = minicpmo_audio_tokens(int(config.raw.get("audio_pool_step", 2)))
        return out


_COMBINED: dict[type, type] = {}


def _combined(lm: type[Adapter]) -> type:
    """The audio + vision tower over the version's language-model adapter, built once per adapter."""
    if lm not in _COMBINED:
        _COMBINED[lm] = type(f"MiniCPMO[{lm.__name__}]", (_MiniCPMOTower, lm), {"family": lm.family})
    return _COMBINED[lm]


@register
class MiniCPMO(_MiniCPMOTower, Adapter):
    """``MiniCPMO``: MiniCPM-V 2.6 / 4.5 (language model, ``vpm``, ``resampler``) + ``apm`` + projector."""

    architectures = ("MiniCPMO",)

    def __new__(cls, config: Any) -> Any:
        version = minicpmo_version(config.raw)
        if version not in ((2, 6), (4, 5)):
            raise ModelConfigError(f"MiniCPMO version {'.'.join(map(str, version))} is not supported by vLLM",
                                   hint="vLLM 0.33.0 minicpmo.py builds versions 2.6 and 4.5 only")
        lm = adapter_class(_LM_BY_VERSION[version])
        assert lm is not None, version  # Qwen2 / Qwen3 are registered
        return _combined(lm)(config)
