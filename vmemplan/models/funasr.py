"""Fun-ASR (``FunASRForConditionalGeneration``, e.g. FunAudioLLM/Fun-ASR-Nano-2512): the SenseVoice
SANM encoder and a small transformer adaptor in front of a Qwen3 decoder, on one flat Qwen3 config
with an ``audio_encoder_conf``.

vllm/model_executor/models/funasr.py (0.33.0), ``FunASRForConditionalGeneration.__init__`` builds
``model`` = ``FunASRModel`` (``encoder`` = ``FunASREncoder``, ``decoder`` = qwen3.py::Qwen3Model on
the whole config) and ``lm_head`` ParallelLMHead (tied when ``tie_word_embeddings``).  Nothing is
built under ``_mark_tower_model``: the encoder exists whatever ``--limit-mm-per-prompt`` or
``--language-model-only`` say.

* ``encoder.audio_encoder`` = ``SenseVoiceEncoderSmall(input_size=560, **audio_encoder_conf)``:
  ``encoders0`` (1 layer on the 560-wide LFR features), ``encoders`` (``num_blocks`` - 1) and
  ``tp_encoders`` (``tp_blocks``) ``EncoderLayerSANM``: ``norm1`` LayerNorm(in) / ``norm2``
  LayerNorm(d), ``self_attn`` = ``MultiHeadedAttentionSANM``: ``linear_q_k_v``
  ReplicatedLinear(in → 3d) and ``out_proj`` ReplicatedLinear(d → d), biased, ``fsmn_block``
  depthwise nn.Conv1d(d, d, kernel_size, groups=d, no bias); ``feed_forward`` =
  ``PositionwiseFeedForward``: ``w_1`` ColumnParallelLinear(d → linear_units) / ``w_2``
  RowParallelLinear, biased; then ``after_norm`` and ``tp_norm`` LayerNorm(d).  The sinusoidal
  position encoder holds no tensor;
* ``encoder.audio_adaptor`` = ``Transformer`` with the sizes ``FunASREncoder`` hard-codes
  (encoder_dim 512, ffn_dim 2048, llm_dim 1024, downsample_rate 1, n_layer 2, 8 heads):
  ``linear1`` ColumnParallelLinear(512 → 2048) / ``linear2`` RowParallelLinear(2048 → 1024),
  biased, and two ``EncoderLayer``: ``FunASRAudioAttention`` (``qkv`` QKVParallelLinear,
  ``out_proj`` RowParallelLinear, biased), ``PositionwiseFeedForward(1024, 256)``, two LayerNorms.

The dummy audio is the feature extractor's ``chunk_length`` (30 s): 500 LFR frames (lfr_n 6), which
the processor's three stride-2 length steps turn into 63 tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.audio_towers import audio_encoder_conf
from vmemplan.models.base import register
from vmemplan.models.dense import Qwen3
from vmemplan.models.multimodal import FirstStageTower
from vmemplan.models.qwen_audio import _AudioTower

__all__ = ["FunASR", "funasr_encoder"]

#: FunASREncoder's fixed adaptor sizes and SenseVoiceEncoderSmall's LFR input width
ADAPTOR_IN, ADAPTOR_FFN, ADAPTOR_OUT, ADAPTOR_LAYERS, ADAPTOR_HEADS, LFR_INPUT = 512, 2048, 1024, 2, 8, 560
#: LFR frames of the 30 s dummy clip (100 fbank frames a second, lfr_n 6)
DUMMY_LFR_FRAMES = 500


def _conf(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    return audio_encoder_conf(raw, "FunASRForConditionalGeneration")


def _sanm_layers(prefix: str, n: int, width_in: int, d: int, units: int, kernel: int, tp: int) -> list[WeightTensor]:
    def t(name: str, rows: int, cols: int = 1, count: int = n) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols, count)

    return [
        t("norm1", width_in, 1, 2 * n), t("norm2", d, 1, 2 * n),  # weight + bias each
        t("self_attn.linear_q_k_v", 3 * d, width_in), t("self_attn.linear_q_k_v.bias", 3 * d),
        t("self_attn.out_proj", d, d), t("self_attn.out_proj.bias", d), t("self_attn.fsmn_block", d, kernel),
        t("feed_forward.w_1", units // tp, d), t("feed_forward.w_1.bias", units // tp),
        t("feed_forward.w_2", d, units // tp), t("feed_forward.w_2.bias", d),
    ]


def _adaptor(tp: int, prefix: str = "model.encoder.audio_adaptor") -> list[WeightTensor]:
    w, n, ffn = ADAPTOR_OUT, ADAPTOR_LAYERS, ADAPTOR_OUT // 4

    def t(name: str, rows: int, cols: int = 1, count: int = n) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols, count)

    return [
        t("linear1", ADAPTOR_FFN // tp, ADAPTOR_IN, 1), t("linear1.bias", ADAPTOR_FFN // tp, 1, 1),
        t("linear2", w, ADAPTOR_FFN // tp, 1), t("linear2.bias", w, 1, 1),
        t("blocks.self_attn.qkv", 3 * w // tp, w), t("blocks.self_attn.qkv.bias", 3 * w // tp),
        t("blocks.self_attn.out_proj", w, w // tp), t("blocks.self_attn.out_proj.bias", w),
        t("blocks.feed_forward.w_1", ffn // tp, w), t("blocks.feed_forward.w_1.bias", ffn // tp),
        t("blocks.feed_forward.w_2", w, ffn // tp), t("blocks.feed_forward.w_2.bias", w),
        t("blocks.norm1+norm2", w, 1, 4 * n),
    ]


def funasr_encoder(conf: Mapping[str, Any], tp: int, prefix: str = "model.encoder.audio_encoder") -> list[WeightTensor]:
    """SenseVoiceEncoderSmall + the adaptor on one rank (SenseVoiceEncoderSmall defaults where omitted)."""
    d, units = int(conf.get("output_size", 256)), int(conf.get("linear_units", 2048))
    blocks, tp_blocks, kernel = int(conf.get("num_blocks", 6)), int(conf.get("tp_blocks", 0)), int(conf.get("kernel_size", 11))
    out = _sanm_layers(f"{prefix}.encoders0", 1, LFR_INPUT, d, units, kernel, tp)
    if blocks > 1:
        out += _sanm_layers(f"{prefix}.encoders", blocks - 1, d, d, units, kernel, tp)
    if tp_blocks > 0:
        out += _sanm_layers(f"{prefix}.tp_encoders", tp_blocks, d, d, units, kernel, tp)
    out.append(WeightTensor(f"{prefix}.after_norm+tp_norm", "encoder", d, 1, 4))
    return out + _adaptor(tp)


@register
class FunASR(FirstStageTower, _AudioTower, Qwen3):
    """Fun-ASR: the Qwen3 decoder + the SenseVoice encoder and adaptor (always built)."""

    architectures = ("FunASRForConditionalGeneration",)

    def tower_built(self, ctx: GraphContext) -> bool:
        """The encoder is not under ``_mark_tower_model``: built whatever the limits say."""
        return True

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        conf = _conf(config.raw)
        return int(conf.get("output_size", 256)), int(conf.get("linear_units", 2048))

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return funasr_encoder(_conf(config.raw), ctx.tensor_parallel_size)

    def clip_tokens(self) -> int:
        """The processor's length steps on the 30 s dummy clip's 500 LFR frames: 63 tokens."""
        olens = 1 + (DUMMY_LFR_FRAMES - 1) // 2
        olens = 1 + (olens - 1) // 2
        return max(1, (olens - 1) // 2 + 1)

