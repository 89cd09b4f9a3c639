"""vLLM's own Whisper encoder as a pure shape list: the tensors one tensor-parallel rank holds.

vllm/model_executor/models/whisper.py::WhisperEncoder (0.33.0), the tower Ultravox
(ultravox.py::UltravoxWhisperEncoder, a subclass that only changes ``forward``) and the
Whisper-derived audio models build on ``audio_config`` (a transformers ``WhisperConfig``):

* ``conv1`` nn.Conv1d(num_mel_bins → d_model, k 3) and ``conv2`` nn.Conv1d(d_model → d_model,
  k 3, stride 2), both biased, whole on every rank;
* ``encoder_layers`` × whisper.py::WhisperEncoderLayer: ``self_attn.qkv_proj``
  QKVParallelLinear (biased; the checkpoint's missing k bias is a zero filled in at load),
  ``self_attn.out_proj`` RowParallelLinear (biased), ``mlp.fc1`` ColumnParallelLinear /
  ``mlp.fc2`` RowParallelLinear (biased), ``self_attn_layer_norm`` / ``final_layer_norm``
  nn.LayerNorm — split over TP (WhisperAttention asserts that TP divides the heads);
* ``layer_norm`` nn.LayerNorm and ``embed_positions`` nn.Embedding(max_source_positions,
  d_model), a parameter in the model dtype filled with the sinusoid table (float32 when the
  encoder is built with ``init_in_fp32``, as Voxtral's is).

The layer shapes are :func:`vmemplan.models.audio_towers._layers` with the fused qkv.

whisper_causal.py::WhisperCausalEncoder (0.33.0), the streaming tower of Voxtral Realtime
(``audio_config.is_causal``, ``pos_embed`` "rope"), :func:`whisper_causal_encoder`:

* ``conv1`` / ``conv2`` ``WhisperCausalConv1d`` (nn.Conv1d subclasses, the same shapes as above);
* ``encoder_layers`` × ``WhisperCausalEncoderLayer``: ``self_attn.qkv_proj`` QKVParallelLinear(d_model
  → heads × ``encoder_head_dim``, as many KV heads, biased), ``self_attn.out_proj`` RowParallelLinear
  (biased), ``self_attn.rotary_emb`` (get_rope: ``encoder_head_dim``, ``max_position_embeddings``
  positions, one cos/sin table every layer shares), ``mlp`` = mistral.py::MistralMLP(d_model,
  encoder_ffn_dim, bias=True, gate_up_proj_bias=False) and two RMSNorms (weight only); the
  attention is a KV-cached Attention layer, with its four float32 ``_k/_v/_q/_prob_scale``;
* ``layer_norm`` RMSNorm; no position table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.errors import ModelConfigError
from vmemplan.core.graph import WeightTensor, attention_scales
from vmemplan.models.audio_towers import _dims, _layers

__all__ = ["whisper_causal_encoder", "whisper_encoder", "whisper_encoder_layers"]


def whisper_encoder_layers(ac: Mapping[str, Any], n: int, tp: int, prefix: str) -> list[WeightTensor]:
    """``n`` whisper.py::WhisperEncoderLayer on ``ac`` (d_model, encoder_ffn_dim), split over ``tp``."""
    d, _n, heads, ffn, _mels, _positions = _dims(ac)
    if heads % tp:
        raise ModelConfigError(f"audio_config: {heads} encoder heads do not divide over TP {tp}",
                               hint="vLLM's WhisperAttention asserts that TP divides the heads")
    return _layers(prefix, d, ffn, n, tp, qkv_fused=True)


def whisper_encoder(ac: Mapping[str, Any], tp: int, prefix: str = "audio_tower", *,
                    fp32_positions: bool = False) -> list[WeightTensor]:
    """whisper.py::WhisperEncoder: convolutions, position table, the layers and the final norm;
    ``fp32_positions``: ``init_in_fp32=True`` (Voxtral), the position table built in float32."""
    d, n, _heads, _ffn, mels, positions = _dims(ac)
    return [
        WeightTensor(f"{prefix}.conv1", "encoder", d, mels * 3), WeightTensor(f"{prefix}.conv2", "encoder", d, d * 3),
        WeightTensor(f"{prefix}.conv1+conv2.bias", "encoder", d, 1, 2),
        WeightTensor(f"{prefix}.embed_positions", "encoder", positions, d, dtype="float32" if fp32_positions else None),
        WeightTensor(f"{prefix}.layer_norm", "encoder", d, 1, 2),
        *whisper_encoder_layers(ac, n, tp, prefix),
    ]


def whisper_causal_encoder(ac: Mapping[str, Any], tp: int, prefix: str) -> list[WeightTensor]:
    """whisper_causal.py::WhisperCausalEncoder on ``ac``, one rank's share (see the module docstring)."""
    d, n, heads, ffn, mels, _positions = _dims(ac)
    if heads % tp:
        raise ModelConfigError(f"audio_config: {heads} encoder heads do not divide over TP {tp}",
                               hint="vLLM's WhisperCausalAttention asserts that TP divides the heads")
    qkv = 3 * heads * int(ac.get("encoder_head_dim") or d // heads) // tp

    def t(name: str, rows: int, cols: int = 1, count: int = n) -> WeightTensor:
        return WeightTensor(f"{prefix}.layers.{name}", "encoder", rows, cols, count)

    return [
        WeightTensor(f"{prefix}.conv1", "encoder", d, mels * 3), WeightTensor(f"{prefix}.conv2", "encoder", d, d * 3),
        WeightTensor(f"{prefix}.conv1+conv2.bias", "encoder", d, 1, 2),
        WeightTensor(f"{prefix}.layer_norm", "encoder", d, 1),
        WeightTensor(f"{prefix}.rotary_emb.cos_sin_cache", "buffer", int(ac.get("max_position_embeddings") or 0),
                     qkv * tp // (3 * heads)),
        t("self_attn.qkv_proj", qkv, d), t("self_attn.qkv_proj.bias", qkv),
        t("self_attn.out_proj", d, qkv // 3), t("self_attn.out_proj.bias+norms+mlp.down_proj.bias", d, 1, 4 * n),
        t("mlp.gate_up_proj", 2 * ffn // tp, d), t("mlp.down_proj", d, ffn // tp),
        attention_scales(f"{prefix}.layers.self_attn.attn", n),  # a KV-cached Attention layer's four fp32 scales
    ]
