"""openPangu-VL (``OpenPanguVLForConditionalGeneration``, FreedomIntelligence/openPangu-VL-7B): a
Qwen2.5-VL-style window-attention ViT with one patch merger per selected layer and a projection,
in front of the openPangu-Embedded decoder.

vllm/model_executor/models/openpangu_vl.py (0.33.0), ``OpenPanguVLForConditionalGeneration.__init__``:

* under ``_mark_tower_model(vllm_config, {"image", "video"})`` an ``OpenPanguVisionTransformer``:

  - ``patch_embed``: a plain ``nn.Conv3d`` without bias;
  - ``depth`` ``OpenPanguVisionBlock``: RMSNorm ×2 (weight only), QKVParallelLinear ``qkv`` (bias),
    RowParallelLinear ``proj`` (bias), and ``OpenPanguVisionMLP``: with ``hidden_act`` "silu" a
    MergedColumnParallelLinear ``gate_up_proj`` whose width is rounded up to a multiple of TP,
    otherwise a ColumnParallelLinear ``up_proj``, and RowParallelLinear ``down_proj``, all biased;
  - ``final_layernorm`` (RMSNorm) and one ``OpenPanguVisionPatchMerger`` per
    ``mm_unit_vision_select_layer`` entry (default [-1, -3]): RMSNorm ``ln_q`` of the tower width,
    ColumnParallelLinear(4c → 4c, bias), RowParallelLinear(4c → ``out_hidden_size``, bias);
  - ``vision_projection``: ``ProjectionSingle``, a plain ``nn.Linear(out_hidden_size, text hidden,
    bias=True)``, whole on every rank;
  - ``OpenPanguVisionRotaryEmbedding``'s ``inv_freq``: a plain fp32 device tensor of
    ``head_dim / 4`` entries (``arange(0, head_dim // 2, 2)``), neither parameter nor buffer;
  - every linear is split over TP whatever ``--mm-encoder-tp-mode`` (no ``disable_tp``, and the
    class declares no ``supports_encoder_tp_data``);

* the language model ``init_vllm_registered_model(vllm_config, architectures=
  ["PanguEmbeddedForCausalLM"])`` on the same config: :class:`vmemplan.models.openpangu.PanguEmbedded`,
  its rotary embedding an M-RoPE one when ``rope_scaling`` has an ``mrope_section``
  (openpangu.py::OpenPanguEmbeddedAttention._init_rotary_emb: ``mrope_interleaved`` selects the
  "openpangu" rope, an ``MRotaryEmbeddingInterleaved``; both keep ``max_position × 4`` rows).

Encoder profile: ``OpenPanguVLProcessingInfo`` subclasses ``Qwen2_5_VLProcessingInfo``.
"""

from __future__ import annotations

from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.multimodal import _QwenVLBase
from vmemplan.models.openpangu import PanguEmbedded
from vmemplan.models.vision_towers import _enc, _need, _split, _vision

__all__ = ["OpenPanguVL", "openpangu_vl_tower"]


def openpangu_vl_tower(vc: Any, tp: int, text_hidden: int) -> list[WeightTensor]:
    """OpenPanguVisionTransformer's tensors on one rank (see the module)."""
    c, depth, heads, inter, out, patch = (_need(vc, *k) for k in (
        ("hidden_size",), ("depth",), ("num_heads",), ("intermediate_size",), ("out_hidden_size",), ("patch_size",)))
    tpatch, merge, chans = (int(vc.get(k, d)) for k, d in (("temporal_patch_size", 2), ("spatial_merge_size", 2),
                                                           ("in_channels", 3)))
    _split(heads, tp, "attention heads")
    q = _split(c, tp, "width")
    gated = vc.get("hidden_act", "silu") == "silu"
    i = -(-inter // tp) if gated else _split(inter, tp, "MLP width")  # silu: the width rounded up to TP
    up = ("gate_up_proj", 2 * i) if gated else ("up_proj", i)
    m = c * merge * merge
    mergers = len(vc.get("mm_unit_vision_select_layer") or [-1, -3])
    hd = c // heads
    return [
        _enc("patch_embed.proj", c, chans * tpatch * patch * patch),
        _enc("blocks.norm1+norm2", c, 1, 2 * depth),
        _enc("blocks.attn.qkv", 3 * q, c + 1, depth),  # weight + bias
        _enc("blocks.attn.proj", c, q, depth), _enc("blocks.attn.proj.bias", c, 1, depth),
        _enc(f"blocks.mlp.{up[0]}", up[1], c + 1, depth),  # weight + bias
        _enc("blocks.mlp.down_proj", c, i, depth), _enc("blocks.mlp.down_proj.bias", c, 1, depth),
        _enc("final_layernorm", c),
        _enc("merger.ln_q", c, 1, mergers),
        _enc("merger.mlp.0", m // tp, m + 1, mergers),  # weight + bias
        _enc("merger.mlp.2", out, m // tp, mergers), _enc("merger.mlp.2.bias", out, 1, mergers),
        _enc("vision_projection.fc1", text_hidden, out + 1),  # weight + bias
        WeightTensor("visual.rotary_pos_emb.inv_freq", "buffer", (hd // 2 + 1) // 2, 1, dtype="float32"),
    ]


@register
class OpenPanguVL(_QwenVLBase, PanguEmbedded):
    """openPangu-VL: the openPangu-Embedded decoder with M-RoPE plus the multi-merger window ViT."""

    architectures = ("OpenPanguVLForConditionalGeneration",)
    supports_encoder_tp_data = False  # not declared by the class; the tower ignores the mode anyway

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return openpangu_vl_tower(_vision(config), ctx.tensor_parallel_size, config.hidden_size)

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return self._with_mrope(super().weight_tensors(ctx), ctx) + self.tower_tensors(self.config, ctx)
