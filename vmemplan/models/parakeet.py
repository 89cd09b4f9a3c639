"""The Parakeet (FastConformer) audio encoder and its projector, as vLLM 0.33.0 builds them for the
Nemotron Omni checkpoints' ``sound_config``.

vllm/model_executor/models/parakeet.py::ProjectedParakeet: ``encoder`` = transformers'
``ParakeetEncoder`` (models/parakeet/modeling_parakeet.py, 5.20) on
vllm/transformers_utils/configs/parakeet.py::ParakeetConfig.from_hf_config (``attention_bias`` forced
False, ``scale_input`` False), and ``projection`` = ParakeetProjection (RMSNorm, Linear -> relu² ->
Linear to the LM width, bias under ``projection_bias``); both cast to the LM dtype, plain modules,
never split over TP.

Encoder tensors: ``subsampling`` (Conv2d 1 -> C, then log2(subsampling_factor) - 1 depthwise + 1×1
Conv2d pairs, all with bias; Linear(C · mels / stride^n -> hidden) with bias); the relative
position ``inv_freq`` buffer [hidden / 2]; per block two feed-forwards (Linear hidden -> inter ->
hidden), attention q/k/v/o and ``relative_k_proj`` (bias-free) with ``bias_u`` / ``bias_v``
[heads, head_dim], the convolution module (1×1 Conv1d to 2·hidden, depthwise Conv1d of
``conv_kernel_size``, 1×1 Conv1d, bias under ``convolution_bias``; BatchNorm1d weight, bias,
running mean / var and its int64 ``num_batches_tracked``) and five LayerNorms.

:func:`fast_conformer` is that encoder less its position table, shared with NeMo's ConformerEncoder
as vLLM ports it for Cohere ASR (cohere_asr.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import WeightTensor

__all__ = ["fast_conformer", "projected_parakeet"]


def fast_conformer(prefix: str, *, h: int, n: int, heads: int, hd: int, kv: int, inter: int, ch: int, k2: int,
                   stride: int, steps: int, mels: int, kc: int, conv_bias: bool, linear_bias: bool = False,
                   rel_bias_per_layer: bool = True) -> list[WeightTensor]:
    """A FastConformer encoder's tensors, whole on every rank, less its position table: the
    dw-striding subsampling (Conv2d 1 -> ``ch``, then ``steps`` - 1 depthwise + 1x1 pairs, all
    biased; Linear(``ch`` · mels / stride^steps -> ``h``), biased) and ``n`` blocks (two
    feed-forwards, attention q/k/v/o and the bias-free relative position projection, the
    convolution module with its BatchNorm1d, five LayerNorms).  ``linear_bias``: the feed-forward
    and attention linears carry biases (NeMo's ``use_bias``); ``rel_bias_per_layer``: each block
    has its own ``bias_u`` / ``bias_v`` [heads, hd] (NeMo's ``untie_biases``)."""

    def t(name: str, rows: int, cols: int = 1, count: int = 1, dtype: str | None = None) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols, count, dtype=dtype)

    e = "encoder.layers"
    out = [
        t("encoder.subsampling.layers.0", ch, k2 * k2), t("encoder.subsampling.layers.0.bias", ch),
        t("encoder.subsampling.linear", h, ch * (mels // stride ** steps)), t("encoder.subsampling.linear.bias", h),
    ]
    if steps > 1:
        out += [t("encoder.subsampling.depthwise", ch, k2 * k2, steps - 1),
                t("encoder.subsampling.pointwise", ch, ch, steps - 1),
                t("encoder.subsampling.depthwise+pointwise.bias", ch, 1, 2 * (steps - 1))]
    out += [
        t(f"{e}.feed_forward1+2.linear1", inter, h, 2 * n), t(f"{e}.feed_forward1+2.linear2", h, inter, 2 * n),
        t(f"{e}.self_attn.q_proj+o_proj+relative_k_proj", heads * hd, h, 3 * n),
        t(f"{e}.self_attn.k_proj+v_proj", kv * hd, h, 2 * n),
        t(f"{e}.conv.pointwise_conv1", 2 * h, h, n), t(f"{e}.conv.depthwise_conv", h, kc, n),
        t(f"{e}.conv.pointwise_conv2", h, h, n),
        t(f"{e}.conv.norm.weight+bias", h, 1, 2 * n),
        WeightTensor(f"{prefix}.{e}.conv.norm.running_mean+var", "buffer", h, 1, 2 * n),
        WeightTensor(f"{prefix}.{e}.conv.norm.num_batches_tracked", "buffer", 1, 1, n, dtype="int64"),
        t(f"{e}.norms", h, 1, 10 * n),
    ]
    if rel_bias_per_layer:
        out.append(t(f"{e}.self_attn.bias_u+bias_v", heads, hd, 2 * n))
    if conv_bias:
        out.append(t(f"{e}.conv.biases", 4 * h, 1, n))  # pointwise 1 (2h) + depthwise (h) + pointwise 2 (h)
    if linear_bias:
        out += [t(f"{e}.feed_forward1+2.linear1.bias", inter, 1, 2 * n), t(f"{e}.feed_forward1+2.linear2.bias", h, 1, 2 * n),
                t(f"{e}.self_attn.q_proj+o_proj.bias", heads * hd, 1, 2 * n), t(f"{e}.self_attn.k_proj+v_proj.bias", kv * hd, 1, 2 * n)]
    return out


def projected_parakeet(sc: Mapping[str, Any], llm_hidden: int, prefix: str = "sound_encoder") -> list[WeightTensor]:
    """Every tensor of ProjectedParakeet for the ``sound_config`` ``sc``."""
    h = int(sc.get("hidden_size", 1024))
    heads = int(sc.get("num_attention_heads", 8))
    out = fast_conformer(
        prefix, h=h, n=int(sc.get("num_hidden_layers", 24)), heads=heads, hd=int(sc.get("head_dim") or h // heads),
        kv=int(sc.get("num_key_value_heads") or heads), inter=int(sc.get("intermediate_size", 4096)),
        ch=int(sc.get("subsampling_conv_channels", 256)), k2=int(sc.get("subsampling_conv_kernel_size", 3)),
        stride=int(sc.get("subsampling_conv_stride", 2)), steps=int(math.log2(int(sc.get("subsampling_factor", 8)))),
        mels=int(sc.get("num_mel_bins", 80)), kc=int(sc.get("conv_kernel_size", 9)),
        conv_bias=bool(sc.get("convolution_bias", True)))
    out.append(WeightTensor(f"{prefix}.encoder.encode_positions.inv_freq", "buffer", h // 2, 1))
    proj = int(sc["projection_hidden_size"])

    def t(name: str, rows: int, cols: int = 1) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols)

    out += [t("projection.norm", h), t("projection.linear1", proj, h), t("projection.linear2", llm_hidden, proj)]
    if bool(sc.get("projection_bias", False)):
        out += [t("projection.linear1.bias", proj), t("projection.linear2.bias", llm_hidden)]
    return out
