"""Intern-S1-Pro (``InternS1ProForConditionalGeneration``, internlm/Intern-S1-Pro, 1T-A22B).

vllm/model_executor/models/interns1_pro.py (0.33.0): a Qwen3-MoE decoder (InternS1ProMoeDecoderLayer:
Qwen3 attention with q/k RMSNorm, 512 experts behind a GateLinear router, no shared expert) in
front of Qwen3-VL's vision transformer, with three differences from Qwen3-VL-MoE:

* positions are 1-D Fourier position encoding, not M-RoPE: every layer asks ``get_rope`` for a
  ``FourierRotaryEmbedding`` (rotary_embedding/fope.py) with the same parameters, so one instance
  is shared by all layers.  It holds an fp32 ``inv_freq`` buffer of the kept frequencies (the first
  ``num_inv_freq``, else those above ``2 pi / max_position_embeddings``), ``cos_coef`` and
  ``sin_coef`` parameters ``[kv heads per rank, n, n]`` in the model dtype, and a ``cos_sin_cache``
  buffer ``[max_position_embeddings, (kv heads per rank,) 2 x head_dim]`` in the model dtype (the
  kv-head axis only with ``fope_sep_head``);
* ``__init__`` skips Qwen3VLForConditionalGeneration's, so no deepstack input-embedding buffers are
  allocated, and the released vision config has no ``deepstack_visual_indexes`` (no deepstack
  mergers);
* the tower is built without the quantization config (it stays in the model dtype, as vmemplan
  keeps every vision tower).
"""

from __future__ import annotations

import math
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.moe import Qwen3Moe
from vmemplan.models.multimodal import _Qwen3VLTower

__all__ = ["InternS1Pro", "fope_tensors", "fope_kept_frequencies"]


def _f32(x: float) -> float:
    """``x`` rounded to float32, as torch holds it."""
    import struct

    return struct.unpack("f", struct.pack("f", x))[0]


def fope_kept_frequencies(rotary_dim: int, base: float, max_position: int, num_inv_freq: int | None) -> int:
    """How many inverse frequencies FourierRotaryEmbedding._compute_inv_freq keeps: the first
    ``num_inv_freq`` when set, else those ``1 / base ** (2i / rotary_dim)`` above the float32
    ``2 pi / max_position`` (both sides in float32, as torch compares a float32 tensor with a scalar)."""
    n = rotary_dim // 2
    if num_inv_freq is not None:
        return min(int(num_inv_freq), n)
    threshold = _f32(2.0 * math.pi / max_position)
    kept = 0
    for i in range(n):
        inv = _f32(1.0 / _f32(_f32(base) ** _f32(_f32(2 * i) / rotary_dim)))
        kept += inv > threshold
    return kept


def fope_tensors(*, head_dim: int, kv_heads_rank: int, base: float, max_position: int,
                 num_inv_freq: int | None, sep_head: bool) -> list[WeightTensor]:
    """The shared FourierRotaryEmbedding's tensors on one rank (see the module docstring)."""
    n = fope_kept_frequencies(head_dim, base, max_position, num_inv_freq)
    return [
        WeightTensor("rotary_emb.inv_freq", "buffer", 1, n, dtype="float32"),
        WeightTensor("rotary_emb.cos_coef+sin_coef", "norm", kv_heads_rank * n, n, 2),
        WeightTensor("rotary_emb.cos_sin_cache", "buffer", max_position,
                     (kv_heads_rank if sep_head else 1) * 2 * head_dim),
    ]


@register
class InternS1Pro(_Qwen3VLTower, Qwen3Moe):
    """Intern-S1-Pro: Qwen3-MoE with FoPE plus the Qwen3-VL tower (no deepstack)."""

    architectures = ("InternS1ProForConditionalGeneration",)

    def _fope(self) -> dict[str, Any]:
        rs = self.config.text.get("rope_scaling") or {}
        return rs if isinstance(rs, dict) else {}

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        cfg = self.config
        base_tensors = Qwen3Moe.weight_tensors(self, ctx)
        text = [t for t in base_tensors if t.name != "rotary_emb.cos_sin_cache"]
        if len(text) < len(base_tensors):  # the stage holds decoder layers, hence the shared rotary module
            rs = self._fope()
            kv_rank = max(1, cfg.num_key_value_heads // ctx.tensor_parallel_size)
            text += fope_tensors(head_dim=cfg.head_dim, kv_heads_rank=kv_rank,
                                 base=float(cfg.text.get("rope_theta", 5000000.0)),
                                 max_position=cfg.max_position_embeddings,
                                 num_inv_freq=rs.get("num_inv_freq"), sep_head=bool(rs.get("fope_sep_head")))
        return text + self.tower_tensors(cfg, ctx)
