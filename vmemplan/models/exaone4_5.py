"""EXAONE 4.5 (``Exaone4_5_ForConditionalGeneration``, LGAI-EXAONE/EXAONE-4.5-33B): a Qwen2.5-VL-style
vision transformer with grouped-query attention in front of the EXAONE 4 decoder.

vllm/model_executor/models/exaone4_5.py (0.33.0): ``Exaone4_5_ForConditionalGeneration`` subclasses
``Qwen2_5_VLForConditionalGeneration`` with its own ``__init__``:

* under ``_mark_tower_model(vllm_config, {"image", "video"})`` an ``EXAONE4_5_VisionTransformer``: the
  ``Qwen2_5_VisionTransformer`` (patch embed, rotary cache, merger:
  :func:`vmemplan.models.vision_towers.qwen2_5_vl_tower`) whose blocks are rebuilt as
  ``Exaone4_5_VisionBlock`` — RMSNorm ×2, ``EXAONE4_5_VisionAttention`` (QKVParallelLinear with
  ``num_key_value_heads`` KV heads and bias, RowParallelLinear proj with bias) and ``Exaone4GatedMLP``
  with biases (the same gate_up / down shapes as Qwen2.5-VL's);
* the language model ``init_vllm_registered_model(hf_config=config.get_text_config(),
  architectures=["Exaone4ForCausalLM"])``: vmemplan's declared Exaone4 adapter
  (registry/architectures/dense_b.yaml), plain RoPE (no M-RoPE in its text config);
* ``supports_encoder_tp_data`` from Qwen2.5-VL: ``--mm-encoder-tp-mode data`` keeps the tower whole.

The encoder profile is Qwen2-VL's (``Exaone4_5_ProcessingInfo`` subclasses ``Qwen2VLProcessingInfo``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import adapter_class, register
from vmemplan.models.multimodal import _QwenVLBase
from vmemplan.models.vision_towers import _need, _tower_tp, _vision, qwen2_5_vl_tower

__all__ = ["Exaone4_5", "exaone4_5_tower"]


def exaone4_5_tower(vc: Mapping[str, Any], tp: int) -> list[WeightTensor]:
    """Qwen2.5-VL's tower with the blocks' qkv holding ``num_key_value_heads`` KV heads (a rank holds
    ``max(1, kv / tp)`` of them, QKVParallelLinear replicating them below one per rank)."""
    c = _need(vc, "hidden_size")
    heads = _need(vc, "num_heads", "num_attention_heads")
    kv = int(vc.get("num_key_value_heads", heads))
    rows = (heads // tp + 2 * max(1, kv // tp)) * (c // heads)
    return [WeightTensor(t.name, t.kind, rows, t.cols, t.count) if t.name.startswith("visual.blocks.attn.qkv") else t
            for t in qwen2_5_vl_tower(vc, tp)]


class _Exaone45Vision(_QwenVLBase):
    """The EXAONE 4.5 tower in front of the Exaone4 decoder."""

    def vision_weight_tensors(self, config: Any, ctx: GraphContext) -> list[WeightTensor]:
        return exaone4_5_tower(_vision(config), _tower_tp(ctx))

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        return self._with_mrope(super().weight_tensors(ctx), ctx) + self.tower_tensors(self.config, ctx)  # type: ignore


_EXAONE4 = adapter_class("Exaone4ForCausalLM")
assert _EXAONE4 is not None, "Exaone4ForCausalLM (registry/architectures/dense_b.yaml)"

Exaone4_5 = register(type("Exaone4_5", (_Exaone45Vision, _EXAONE4), {
    "architectures": ("Exaone4_5_ForConditionalGeneration",), "__module__": __name__,
    "__doc__": "EXAONE 4.5: the Exaone4 decoder plus the GQA Qwen2.5-VL-style tower."}))
