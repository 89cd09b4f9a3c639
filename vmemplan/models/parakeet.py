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
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import WeightTensor

__all__ = ["projected_parakeet"]


def projected_parakeet(sc: Mapping[str, Any], llm_hidden: int, prefix: str = "sound_encoder") -> list[WeightTensor]:
    """Every tensor of ProjectedParakeet for the ``sound_config`` ``sc``."""
    h = int(sc.get("hidden_size", 1024))
    n = int(sc.get("num_hidden_layers", 24))
    heads = int(sc.get("num_attention_heads", 8))
    hd = int(sc.get("head_dim") or h // heads)
    kv = int(sc.get("num_key_value_heads") or heads)
    inter = int(sc.get("intermediate_size", 4096))
    ch = int(sc.get("subsampling_conv_channels", 256))
    k2 = int(sc.get("subsampling_conv_kernel_size", 3))
    stride = int(sc.get("subsampling_conv_stride", 2))
    steps = int(math.log2(int(sc.get("subsampling_factor", 8))))
    mels = int(sc.get("num_mel_bins", 80))
    kc = int(sc.get("conv_kernel_size", 9))
    cb = bool(sc.get("convolution_bias", True))
    proj = int(sc["projection_hidden_size"])

    def t(name: str, rows: int, cols: int = 1, count: int = 1, dtype: str | None = None) -> WeightTensor:
        return WeightTensor(f"{prefix}.{name}", "encoder", rows, cols, count, dtype=dtype)

    e = "encoder.layers"
    out = [
        t("encoder.subsampling.layers.0", ch, k2 * k2), t("encoder.subsampling.layers.0.bias", ch),
        t("encoder.subsampling.linear", h, ch * (mels // stride ** steps)), t("encoder.subsampling.linear.bias", h),
        WeightTensor(f"{prefix}.encoder.encode_positions.inv_freq", "buffer", h // 2, 1),
    ]
    if steps > 1:
        out += [t("encoder.subsampling.depthwise", ch, k2 * k2, steps - 1),
                t("encoder.subsampling.pointwise", ch, ch, steps - 1),
                t("encoder.subsampling.depthwise+pointwise.bias", ch, 1, 2 * (steps - 1))]
    out += [
        t(f"{e}.feed_forward1+2.linear1", inter, h, 2 * n), t(f"{e}.feed_forward1+2.linear2", h, inter, 2 * n),
        t(f"{e}.self_attn.q_proj+o_proj+relative_k_proj", heads * hd, h, 3 * n),
        t(f"{e}.self_attn.k_proj+v_proj", kv * hd, h, 2 * n),
        t(f"{e}.self_attn.bias_u+bias_v", heads, hd, 2 * n),
        t(f"{e}.conv.pointwise_conv1", 2 * h, h, n), t(f"{e}.conv.depthwise_conv", h, kc, n),
        t(f"{e}.conv.pointwise_conv2", h, h, n),
        t(f"{e}.conv.norm.weight+bias", h, 1, 2 * n),
        WeightTensor(f"{prefix}.{e}.conv.norm.running_mean+var", "buffer", h, 1, 2 * n),
        WeightTensor(f"{prefix}.{e}.conv.norm.num_batches_tracked", "buffer", 1, 1, n, dtype="int64"),
        t(f"{e}.norms", h, 1, 10 * n),
    ]
    if cb:
        out.append(t(f"{e}.conv.biases", 4 * h, 1, n))  # pointwise 1 (2h) + depthwise (h) + pointwise 2 (h)
    bias = bool(sc.get("projection_bias", False))
    out += [t("projection.norm", h), t("projection.linear1", proj, h), t("projection.linear2", llm_hidden, proj)]
    if bias:
        out += [t("projection.linear1.bias", proj), t("projection.linear2.bias", llm_hidden)]
    return out
