"""GLM-ASR (``GlmAsrForConditionalGeneration``, e.g. zai-org/GLM-ASR-Nano-2512): vLLM's own
rotary Whisper-style encoder and a split MLP projector in front of a Llama decoder.

vllm/model_executor/models/glmasr.py (0.33.0), ``GlmAsrForConditionalGeneration.__init__``:

* under ``_mark_tower_model(vllm_config, "audio")``:

  - ``audio_tower`` = ``GlmAsrEncoder`` on ``audio_config`` (transformers' GlmAsrEncoderConfig):
    ``conv1`` nn.Conv1d(num_mel_bins → hidden, k 3) and ``conv2`` (hidden → hidden, k 3,
    stride 2), biased; ``num_hidden_layers`` × ``GlmAsrEncoderLayer``: ``self_attn.qkv_proj``
    QKVParallelLinear(hidden, head_dim, heads, kv_heads, biased: kv heads replicated when TP
    exceeds them), ``self_attn.o_proj`` RowParallelLinear (biased), ``mlp.fc1``
    ColumnParallelLinear / ``mlp.fc2`` RowParallelLinear (biased), ``input_layernorm`` /
    ``post_attention_layernorm`` nn.LayerNorm; ``norm`` nn.LayerNorm; and
    ``GlmAsrEncoderRotaryEmbedding``'s float32 ``inv_freq`` buffer of ``head_dim ·
    partial_rotary_factor / 2`` (transformers' GlmAsrEncoderConfig defaults the factor to 0.5).
    No position table: the checkpoint's ``audio_tower.embed_positions`` maps to None;
  - ``multi_modal_projector`` = ``GlmAsrMultiModalProjector``: ``linear_1``
    ColumnParallelLinear(audio ``intermediate_size`` → 2 · text hidden) and ``linear_2``
    RowParallelLinear(2 · text hidden → text hidden), both with the default bias;

* under ``_mark_language_model``: ``init_vllm_registered_model`` on ``text_config`` with
  ``architectures=["LlamaForCausalLM"]``.

No ``supports_encoder_tp_data``.  The dummy audio is the processor's ``max_audio_len`` (655 s)
long, cut into at most ``655 // 30`` = 21 windows of 30 s; a window gives
``(1500 - merge_factor) // merge_factor + 1`` = 375 tokens (glmasr_utils.py,
``merge_factor`` 4).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.audio_towers import _int, audio_config
from vmemplan.models.base import register
from vmemplan.models.dense import LlamaLike
from vmemplan.models.multimodal import FirstStageTower
from vmemplan.models.qwen_audio import _AudioTower

__all__ = ["GlmAsr", "glmasr_encoder"]

#: glmasr_utils.py: DEFAULT_MAX_AUDIO_LEN_S, DEFAULT_MERGE_FACTOR; WhisperFeatureExtractor's 30 s chunk
MAX_AUDIO_S, MERGE_FACTOR, CHUNK_S = 655, 4, 30


def _rotary_dim(ac: Mapping[str, Any], head_dim: int) -> int:
    rp = ac.get("rope_parameters") if isinstance(ac.get("rope_parameters"), Mapping) else {}
    factor = float(rp.get("partial_rotary_factor", ac.get("partial_rotary_factor", 0.5)))  # type: ignore[union-attr]
    return int(head_dim * factor)


def glmasr_encoder(ac: Mapping[str, Any], tp: int, prefix: str = "audio_tower") -> list[WeightTensor]:
    """glmasr.py::GlmAsrEncoder's tensors on one rank (see the module docstring)."""
    d, n = _int(ac, "hidden_size", 1280), _int(ac, "num_hidden_layers", 32)
    heads, ffn, mels = _int(ac, "num_attention_heads", 20), _int(ac, "intermediate_size", 5120), _int(ac, "num_mel_bins", 128)
    kv = _int(ac, "num_key_value_heads", heads)
    hd = d // heads
    qkv = (heads // tp + 2 * max(1, kv // tp)) * hd

    def t(name: str, rows: int, cols: int = 1, count: int = n) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols, count)

    return [
        t("conv1", d, mels * 3, 1), t("conv2", d, d * 3, 1), t("conv1+conv2.bias", d, 1, 2),
        t("layers.self_attn.qkv_proj", qkv, d), t("layers.self_attn.qkv_proj.bias", qkv),
        t("layers.self_attn.o_proj", d, heads // tp * hd), t("layers.self_attn.o_proj.bias", d),
        t("layers.mlp.fc1", ffn // tp, d), t("layers.mlp.fc1.bias", ffn // tp),
        t("layers.mlp.fc2", d, ffn // tp), t("layers.mlp.fc2.bias", d),
        t("layers.input_layernorm+post_attention_layernorm", d, 1, 4 * n),  # weight + bias each
        t("norm", d, 1, 2),
        WeightTensor(f"{prefix}.rotary_emb.inv_freq", "buffer", _rotary_dim(ac, hd) // 2, 1, dtype="float32"),
    ]


@register
class GlmAsr(FirstStageTower, _AudioTower, LlamaLike):
    """GLM-ASR: Llama on ``text_config`` + the GLM-ASR encoder and its projector."""

    architectures = ("GlmAsrForConditionalGeneration",)

    @property
    def patches_per_token(self) -> int:
        return _int(self.config.raw, "merge_factor", MERGE_FACTOR)

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        ac = audio_config(config.raw, config.architecture)
        return _int(ac, "hidden_size", 1280), _int(ac, "intermediate_size", 5120)

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        ac = audio_config(config.raw, config.architecture)
        tp, h = ctx.tensor_parallel_size, config.hidden_size
        return glmasr_encoder(ac, tp) + [
            WeightTensor("multi_modal_projector.linear_1", "encoder", 2 * h // tp, _int(ac, "intermediate_size", 5120)),
            WeightTensor("multi_modal_projector.linear_1.bias", "encoder", 2 * h // tp, 1),
            WeightTensor("multi_modal_projector.linear_2", "encoder", h, 2 * h // tp),
            WeightTensor("multi_modal_projector.linear_2.bias", "encoder", h, 1),
        ]

    def clip_tokens(self) -> int:
        """21 windows × 375 tokens (see the module docstring)."""
        merge = _int(self.config.raw, "merge_factor", MERGE_FACTOR)
        return MAX_AUDIO_S // CHUNK_S * ((1500 - merge) // merge + 1)

