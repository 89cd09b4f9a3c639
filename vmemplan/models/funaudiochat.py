"""Fun-Audio-Chat (``FunAudioChatForConditionalGeneration``, e.g. FunAudioLLM/Fun-Audio-Chat-8B): a
continuous Whisper-style audio tower and a discrete speech-token encoder in front of Qwen3.

vllm/model_executor/models/funaudiochat.py (0.33.0), ``FunAudioChatForConditionalGeneration.__init__``
(config: vllm/transformers_utils/configs/funaudiochat.py::FunAudioChatConfig, whose ``audio_config``
is a FunAudioChatAudioEncoderConfig):

* under ``_mark_tower_model(vllm_config, "audio")``:

  - ``continuous_audio_tower`` = ``FunAudioChatAudioEncoder``: ``conv1`` nn.Conv1d(num_mel_bins →
    d_model, k 3) and ``conv2`` (d_model → d_model, k 3, stride 2), biased; ``encoder_layers`` ×
    ``FunAudioChatAudioEncoderLayer``: ``self_attn.qkv_proj`` QKVParallelLinear(d_model, heads,
    biased) and ``self_attn.out_proj`` RowParallelLinear (biased), split over TP, but ``fc1`` /
    ``fc2`` plain nn.Linear (biased, whole on every rank), ``self_attn_layer_norm`` /
    ``final_layer_norm`` nn.LayerNorm; ``ln_post`` nn.LayerNorm, ``proj`` nn.Linear(d_model →
    output_dim, biased), the float32 sinusoid buffer [max_source_positions, d_model]
    (``_SinusoidsPositionEmbedding``: ``torch.arange(...).float()``) and ``audio_bos_eos_token``
    nn.Embedding(2, output_dim);
  - ``audio_tower`` = ``FunAudioChatDiscreteEncoder``: ``embed_tokens`` nn.Embedding(codebook_size,
    output_dim) and ``output_matching`` / ``continual_output_matching`` nn.Linear(output_dim →
    output_dim, no bias);

* under ``_mark_language_model``: ``init_vllm_registered_model`` on ``text_config`` with
  ``architectures=["Qwen3ForCausalLM"]``.  The checkpoint's ``audio_invert_tower`` maps to None.

No ``supports_encoder_tp_data``; audio is unlimited per prompt.  One item is at most
``max_source_positions`` tokens (FunAudioChatProcessingInfo.get_mm_max_tokens_per_item): the dummy
audio is ``max_source_positions · group_size`` speech frames at 25 per second (300 s for 1,500 ·
5), whose discrete tokens the encoder averages ``group_size`` at a time; the continuous tower sees
two mel frames per encoder position and pools two positions into one frame, so an output token
stands for ``2 · group_size`` encoder positions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.audio_towers import _dims, _int, _sinusoids, audio_config
from vmemplan.models.base import register
from vmemplan.models.dense import Qwen3
from vmemplan.models.multimodal import FirstStageTower
from vmemplan.models.qwen_audio import _AudioTower

__all__ = ["FunAudioChat", "funaudiochat_towers"]


def _continuous(ac: Mapping[str, Any], tp: int, prefix: str) -> list[WeightTensor]:
    d, n, heads, ffn, mels, positions = _dims(ac)
    if heads % tp:
        raise ModelConfigError(f"audio_config: {heads} encoder heads do not divide over TP {tp}",
                               hint="FunAudioChatAudioAttention's QKVParallelLinear splits the heads over TP")
    od = _int(ac, "output_dim", 3584)

    def t(name: str, rows: int, cols: int = 1, count: int = n) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols, count)

    return [
        t("conv1", d, mels * 3, 1), t("conv2", d, d * 3, 1), t("conv1+conv2.bias", d, 1, 2),
        t("layers.self_attn.qkv_proj", 3 * d // tp, d), t("layers.self_attn.qkv_proj.bias", 3 * d // tp),
        t("layers.self_attn.out_proj", d, d // tp), t("layers.self_attn.out_proj.bias", d),
        t("layers.fc1", ffn, d), t("layers.fc1.bias", ffn), t("layers.fc2", d, ffn), t("layers.fc2.bias", d),
        t("layers.self_attn_layer_norm+final_layer_norm", d, 1, 4 * n),  # weight + bias each
        t("ln_post", d, 1, 2), t("proj", od, d, 1), t("proj.bias", od, 1, 1),
        t("audio_bos_eos_token", 2, od, 1),
        _sinusoids(prefix, positions, d),
    ]


def funaudiochat_towers(ac: Mapping[str, Any], tp: int) -> list[WeightTensor]:
    """Both audio towers' tensors on one rank (see the module docstring)."""
    od = _int(ac, "output_dim", 3584)
    codebook = ac.get("codebook_size")
    if not isinstance(codebook, int):
        raise ModelConfigError("audio_config.codebook_size must be a whole number (the discrete encoder's vocabulary)")
    return _continuous(ac, tp, "continuous_audio_tower") + [
        WeightTensor("audio_tower.embed_tokens", "encoder", codebook, od),
        WeightTensor("audio_tower.output_matching+continual_output_matching", "encoder", od, od, 2),
    ]


@register
class FunAudioChat(FirstStageTower, _AudioTower, Qwen3):
    """Fun-Audio-Chat: Qwen3 on ``text_config`` + the continuous and discrete audio encoders."""

    architectures = ("FunAudioChatForConditionalGeneration",)

    @property
    def patches_per_token(self) -> int:
        """Continuous-encoder positions per LM token: 2 (the average pool) × ``group_size``."""
        return 2 * _int(audio_config(self.config.raw, self.config.architecture), "group_size", 5)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return funaudiochat_towers(audio_config(config.raw, config.architecture), ctx.tensor_parallel_size)

    def clip_tokens(self) -> int:
        """``max_source_positions`` tokens per item (see the module docstring)."""
        return _dims(audio_config(self.config.raw, self.config.architecture))[5]

