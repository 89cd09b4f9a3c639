"""Audio towers as pure shape lists: the tensors each audio encoder holds per rank.

The counterpart of :mod:`vmemplan.models.vision_towers` for the Whisper-style encoders of the
Qwen audio models (vLLM 0.33.0):

* :func:`qwen2_audio_encoder`: transformers' ``Qwen2AudioEncoder``
  (models/qwen2_audio/modeling_qwen2_audio.py), which vllm/model_executor/models/qwen2_audio.py::
  Qwen2AudioForConditionalGeneration builds as a plain torch module, and transformers'
  ``Qwen2_5OmniAudioEncoder`` (models/qwen2_5_omni/modeling_qwen2_5_omni.py), which
  qwen2_5_omni_thinker.py::Qwen2_5OmniThinkerForConditionalGeneration builds; both are
  ``nn.Linear`` / ``nn.Conv1d`` / ``nn.LayerNorm`` modules, whole on every tensor-parallel rank;
* :func:`qwen3_omni_audio_encoder`: vLLM's own qwen3_omni_moe_thinker.py::Qwen3OmniMoeAudioEncoder
  (Qwen3-ASR, Qwen3-Omni), whose attention and MLP linears are split over TP when TP divides the
  encoder heads (replicated otherwise).

Every tensor is in the model dtype except the sinusoidal position table, which is computed in
float32 (``torch.arange(...).float()``) and kept as a float32 buffer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import WeightTensor

__all__ = ["audio_config", "audio_encoder_conf", "qwen2_audio_encoder", "qwen3_omni_audio_encoder", "whisper_output_tokens"]


def audio_config(raw: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    ac = raw.get("audio_config")
    if not isinstance(ac, Mapping):
        raise ModelConfigError(f"{where}: config.json lacks audio_config")
    return ac


def _int(ac: Mapping[str, Any], key: str, default: int) -> int:
    v = ac.get(key, default)
    if v is None:
        return default
    if not isinstance(v, int) or isinstance(v, bool):
        raise ModelConfigError(f"audio_config.{key} must be a whole number, got {v!r}")
    return v


def _dims(ac: Mapping[str, Any]) -> tuple[int, int, int, int, int, int]:
    """(d_model, layers, heads, ffn, mel bins, positions) with the encoder config-class defaults
    (Qwen2AudioEncoderConfig / Qwen2_5OmniAudioEncoderConfig / Qwen3OmniMoeAudioEncoderConfig:
    1280, 32, 20, 5120, 128, 1500)."""
    return (_int(ac, "d_model", 1280), _int(ac, "encoder_layers", 32), _int(ac, "encoder_attention_heads", 20),
            _int(ac, "encoder_ffn_dim", 5120), _int(ac, "num_mel_bins", 128), _int(ac, "max_source_positions", 1500))


def _layers(prefix: str, d: int, ffn: int, n: int, tp: int, qkv_fused: bool) -> list[WeightTensor]:
    """``n`` pre-norm encoder layers: attention (q, v, out biased; k unbiased in the HF layout,
    a biased fused qkv in vLLM's), two LayerNorms (weight + bias), fc1 / fc2 (biased)."""

    def t(name: str, rows: int, cols: int = 1, count: int = n) -> WeightTensor:
        return WeightTensor(f"{prefix}.layers.{name}", "encoder", rows, cols, count)

    if qkv_fused:
        attn = [t("self_attn.qkv_proj", 3 * d // tp, d), t("self_attn.qkv_proj.bias", 3 * d // tp),
                t("self_attn.out_proj", d, d // tp), t("self_attn.out_proj.bias", d)]
    else:
        attn = [t("self_attn.q_proj+k_proj+v_proj+out_proj", d, d, 4 * n),
                t("self_attn.q_proj+v_proj+out_proj.bias", d, 1, 3 * n)]
    return attn + [
        t("self_attn_layer_norm+final_layer_norm", d, 1, 4 * n),  # weight + bias each
        t("fc1", ffn // tp, d), t("fc1.bias", ffn // tp),
        t("fc2", d, ffn // tp), t("fc2.bias", d),
    ]


def _sinusoids(prefix: str, positions: int, d: int) -> WeightTensor:
    """SinusoidsPositionEmbedding.positional_embedding: [positions, d] float32 (non-persistent buffer)."""
    return WeightTensor(f"{prefix}.positional_embedding.positional_embedding", "buffer", positions, d, dtype="float32")


def qwen2_audio_encoder(ac: Mapping[str, Any], prefix: str = "audio_tower", *, omni: bool = False) -> list[WeightTensor]:
    """The Whisper-style encoder, replicated on every rank:

    * ``conv1`` Conv1d(mel → d, k 3) and ``conv2`` Conv1d(d → d, k 3, stride 2), biased;
    * Qwen2-Audio: ``embed_positions`` nn.Embedding(max_source_positions, d) and ``layer_norm``;
    * Qwen2.5-Omni (``omni``): the float32 sinusoid table, ``audio_bos_eos_token``
      nn.Embedding(2, output_dim), ``ln_post`` and ``proj`` Linear(d → output_dim) + bias;
    * ``encoder_layers`` layers (:func:`_layers`); the AvgPool1d has no tensors."""
    d, n, _heads, ffn, mels, positions = _dims(ac)
    out = [
        WeightTensor(f"{prefix}.conv1", "encoder", d, mels * 3), WeightTensor(f"{prefix}.conv2", "encoder", d, d * 3),
        WeightTensor(f"{prefix}.conv1+conv2.bias", "encoder", d, 1, 2),
    ]
    out += _layers(prefix, d, ffn, n, 1, qkv_fused=False)
    if omni:
        od = _int(ac, "output_dim", 3584)
        out += [_sinusoids(prefix, positions, d),
                WeightTensor(f"{prefix}.audio_bos_eos_token", "encoder", 2, od),
                WeightTensor(f"{prefix}.ln_post", "encoder", d, 1, 2),
                WeightTensor(f"{prefix}.proj", "encoder", od, d), WeightTensor(f"{prefix}.proj.bias", "encoder", od, 1)]
    else:
        out += [WeightTensor(f"{prefix}.embed_positions", "encoder", positions, d),
                WeightTensor(f"{prefix}.layer_norm", "encoder", d, 1, 2)]
    return out


def qwen3_omni_audio_encoder(ac: Mapping[str, Any], tp: int, prefix: str = "audio_tower") -> list[WeightTensor]:
    """qwen3_omni_moe_thinker.py::Qwen3OmniMoeAudioEncoder (0.33.0): the float32 sinusoid table,
    three Conv2d(k 3, stride 2, biased: 1 → c, c → c, c → c) with c = ``downsample_hidden_size``,
    ``conv_out`` ReplicatedLinear(c · ⌈⌈⌈mel/2⌉/2⌉/2⌉ → d, no bias), the layers (QKVParallelLinear /
    ColumnParallelLinear fc1 / RowParallelLinear out_proj, fc2, split over TP when TP divides the
    heads, else replicated: ``disable_tp``), ``ln_post`` and ``proj1`` (d → d) / ``proj2``
    (d → output_dim) ReplicatedLinears with biases."""
    d, n, heads, ffn, mels, positions = _dims(ac)
    c = _int(ac, "downsample_hidden_size", 480)
    od = _int(ac, "output_dim", 3584)
    split = tp if heads % tp == 0 else 1
    freq = (((mels + 1) // 2 + 1) // 2 + 1) // 2
    out = [
        _sinusoids(prefix, positions, d),
        WeightTensor(f"{prefix}.conv2d1", "encoder", c, 9), WeightTensor(f"{prefix}.conv2d2+conv2d3", "encoder", c, c * 9, 2),
        WeightTensor(f"{prefix}.conv2d1+2+3.bias", "encoder", c, 1, 3),
        WeightTensor(f"{prefix}.conv_out", "encoder", d, c * freq),
    ]
    out += _layers(prefix, d, ffn, n, split, qkv_fused=True)
    out += [WeightTensor(f"{prefix}.ln_post", "encoder", d, 1, 2),
            WeightTensor(f"{prefix}.proj1", "encoder", d, d), WeightTensor(f"{prefix}.proj1.bias", "encoder", d, 1),
            WeightTensor(f"{prefix}.proj2", "encoder", od, d), WeightTensor(f"{prefix}.proj2.bias", "encoder", od, 1)]
    return out


def whisper_output_tokens(mel_frames: int) -> int:
    """Tokens of a Whisper-style clip of ``mel_frames`` frames: conv2 (stride 2) then the
    AvgPool1d(2, 2) (qwen2_audio.py::_get_feat_extract_output_lengths)."""
    after_conv = (mel_frames - 1) // 2 + 1
    return (after_conv - 2) // 2 + 1


def audio_encoder_conf(raw: Mapping[str, Any], architecture: str) -> Mapping[str, Any]:
    """The ``audio_encoder_conf`` dict of a FunASR-style config (FunASR, FireRedASR2), or a
    config error naming ``architecture``."""
    conf = raw.get("audio_encoder_conf")
    if not isinstance(conf, Mapping):
        raise ModelConfigError(f"{architecture}: config.json lacks audio_encoder_conf")
    return conf
