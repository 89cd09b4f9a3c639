"""FireRedASR2 (``FireRedASR2ForConditionalGeneration``, e.g. allendou/FireRedASR2-LLM-vllm): vLLM's
Conformer encoder and a two-layer adapter in front of a Qwen2 decoder on the same config.

vllm/model_executor/models/fireredasr2.py (0.33.0), ``FireRedASR2ForConditionalGeneration.__init__``
builds ``FireRedASR2Model`` under ``_mark_composite_model(language_targets=Qwen2ForCausalLM,
tower_targets={"audio": (FireRedASR2Encoder, FireRedASR2Adapter)})``; the config is a plain
Qwen2Config carrying ``audio_encoder_conf`` and ``encoder_downsample_rate``:

* ``encoder.audio_encoder`` = conformer_encoder.py::ConformerEncoder(**audio_encoder_conf) (idim,
  n_layers_enc, n_head, d_model, kernel_size 33, pe_maxlen 5000), every linear a ReplicatedLinear
  and the rest plain torch modules, so the tower is whole on every rank:

  - ``input_preprocessor`` (Conv2dSubsampling): two nn.Conv2d(k 3, stride 2, biased: 1 → 32,
    32 → 32) and ``out`` ReplicatedLinear(32 · ((idim - 1) // 2 - 1) // 2 → d_model, biased);
  - ``positional_encoding`` (RelPositionalEncoding): the non-persistent ``pe`` buffer
    [1, 2 · pe_maxlen - 1, d_model] in the model dtype (built with the default dtype);
  - ``n_layers_enc`` × RelPosEmbConformerBlock: ``ffn1`` / ``ffn2`` (ConformerFeedForward:
    LayerNorm, ``linear_expand`` d → 4d and ``linear_project`` 4d → d, biased), ``mhsa``
    (RelPosMultiHeadAttention: ``w_qs`` / ``w_ks`` / ``w_vs`` / ``fc`` / ``linear_pos`` d × d without
    bias, ``layer_norm_q`` / ``_k`` / ``_v``, ``pos_bias_u`` / ``pos_bias_v`` [n_head, d / n_head]),
    ``conv`` (ConformerConvolution: LayerNorm, ``pointwise_conv1`` Conv1d(d → 4d, k 1), depthwise
    Conv1d(2d, k kernel_size, groups 2d), ``batch_norm`` LayerNorm(2d), ``pointwise_conv2``
    Conv1d(2d → d, k 1), no conv bias) and a final ``layer_norm``;

* ``encoder_projector`` = FireRedASR2Adapter: ``linear1`` ReplicatedLinear(d_model ·
  encoder_downsample_rate → hidden_size) and ``linear2`` ReplicatedLinear(hidden → hidden), biased;
* ``decoder`` = Qwen2ForCausalLM on the same config (planned by :class:`vmemplan.models.dense.Qwen2`).

No ``supports_encoder_tp_data``; one audio per prompt (FireRedASR2ProcessingInfo.
get_supported_mm_limits).  The dummy audio is the feature extractor's ``chunk_length`` (30 s at
16 kHz): 2,998 Kaldi fbank frames (25 ms window, 10 ms shift, snip_edges), padded by 6 for the
subsampling context; the mask's two stride-2 slices keep 750 encoder frames and the adapter merges
``downsample_rate`` (2) of them, so 375 tokens (transformers_utils/processors/fireredasr2.py::
FireRedASR2FeatureExtractor.__call__'s ``fake_token_lengths``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.audio_towers import _int, audio_encoder_conf
from vmemplan.models.base import register
from vmemplan.models.dense import Qwen2
from vmemplan.models.multimodal import FirstStageTower
from vmemplan.models.qwen_audio import _AudioTower

__all__ = ["FireRedASR2", "conformer_encoder", "fireredasr2_clip_tokens"]

#: FireRedASR2FeatureExtractor defaults: 30 s chunks at 16 kHz, 25 ms / 10 ms frames, context 3 + 1 + 3
CHUNK_S, SAMPLE_RATE, FRAME_LEN, FRAME_SHIFT, CONTEXT = 30, 16000, 400, 160, 7
#: Conv2dSubsampling's channels
SUB_CHANNELS = 32


def _conf(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    return audio_encoder_conf(raw, "FireRedASR2ForConditionalGeneration")


def conformer_encoder(conf: Mapping[str, Any], prefix: str = "encoder.audio_encoder") -> list[WeightTensor]:
    """conformer_encoder.py::ConformerEncoder's tensors (whole on every rank; module docstring)."""
    d, n, heads = _int(conf, "d_model", 1280), _int(conf, "n_layers_enc", 16), _int(conf, "n_head", 20)
    kernel, pe_max, idim = _int(conf, "kernel_size", 33), _int(conf, "pe_maxlen", 5000), _int(conf, "idim", 80)
    c = SUB_CHANNELS
    freq = ((idim - 1) // 2 - 1) // 2

    def t(name: str, rows: int, cols: int = 1, count: int = n) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols, count)

    return [
        t("input_preprocessor.conv.0", c, 9, 1), t("input_preprocessor.conv.2", c, c * 9, 1),
        t("input_preprocessor.conv.0+2.bias", c, 1, 2),
        t("input_preprocessor.out", d, c * freq, 1), t("input_preprocessor.out.bias", d, 1, 1),
        WeightTensor(f"{prefix}.positional_encoding.pe", "buffer", 2 * pe_max - 1, d),
        t("layer_stack.ffn1+ffn2.linear_expand", 4 * d, d, 2 * n), t("layer_stack.ffn1+ffn2.linear_expand.bias", 4 * d, 1, 2 * n),
        t("layer_stack.ffn1+ffn2.linear_project", d, 4 * d, 2 * n),
        t("layer_stack.mhsa.w_qs+w_ks+w_vs+fc+linear_pos", d, d, 5 * n),
        t("layer_stack.mhsa.pos_bias_u+pos_bias_v", heads, d // heads, 2 * n),
        t("layer_stack.conv.pointwise_conv1", 4 * d, d), t("layer_stack.conv.depthwise_conv", 2 * d, kernel),
        t("layer_stack.conv.batch_norm", 2 * d, 1, 2 * n), t("layer_stack.conv.pointwise_conv2", d, 2 * d),
        # d-wide vectors: linear_project biases (2), LayerNorm weight + bias of ffn1 / ffn2 / mhsa q, k, v /
        # conv pre_layer_norm / layer_norm (7 norms)
        t("layer_stack.d_vectors", d, 1, (2 + 2 * 7) * n),
    ]


def fireredasr2_clip_tokens(downsample: int) -> int:
    """Tokens of the 30 s dummy clip (see the module docstring)."""
    frames = 1 + (CHUNK_S * SAMPLE_RATE - FRAME_LEN) // FRAME_SHIFT
    padded = frames + CONTEXT - 1
    first = -(-(padded - 2) // 2)  # mask[:, :, :-2:2]
    valid1 = -(-frames // 2)
    second = -(-(first - 2) // 2)  # once more
    kept = min(second, -(-valid1 // 2))
    return max(1, kept // downsample)


@register
class FireRedASR2(FirstStageTower, _AudioTower, Qwen2):
    """FireRedASR2: Qwen2 + vLLM's Conformer encoder and the FireRedASR2 adapter."""

    architectures = ("FireRedASR2ForConditionalGeneration",)

    def _downsample(self) -> int:
        return _int(self.config.raw, "encoder_downsample_rate", 2)

    @property
    def patches_per_token(self) -> int:
        """Encoder frames per LM token: the adapter merges ``encoder_downsample_rate`` frames."""
        return self._downsample()

    def encoder_dims(self, config: Any) -> tuple[int, int]:
        d = _int(_conf(config.raw), "d_model", 1280)
        return d, 4 * d

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        d, h = _int(_conf(config.raw), "d_model", 1280), config.hidden_size
        ds = _int(config.raw, "encoder_downsample_rate", 2)
        return conformer_encoder(_conf(config.raw)) + [
            WeightTensor("encoder_projector.linear1", "encoder", h, d * ds),
            WeightTensor("encoder_projector.linear2", "encoder", h, h),
            WeightTensor("encoder_projector.linear1+linear2.bias", "encoder", h, 1, 2),
        ]

    def clip_tokens(self) -> int:
        return fireredasr2_clip_tokens(self._downsample())

