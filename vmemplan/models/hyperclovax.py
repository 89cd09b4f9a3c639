"""HyperCLOVA X (HyperCLOVAXForCausalLM): a Llama graph with an optional Peri-LN sandwich.

Mirrors vllm/model_executor/models/hyperclovax.py (0.33.0): HyperCLOVAXAttention (a fused
``qkv_proj`` of ``config.head_dim`` heads, ``o_proj``, biases from ``attention_bias``),
HyperCLOVAXMLP (``gate_up_proj`` + ``down_proj``, biases from ``mlp_bias``), and
HyperCLOVAXDecoderLayer: ``input_layernorm`` and ``post_attention_layernorm`` RMSNorms plus,
when ``use_post_norm`` is set, ``post_norm1`` and ``post_norm2`` (four per layer).  The muP
multipliers (embedding, residual, attention, logits) scale activations only; they hold no
tensors.
"""

from __future__ import annotations

from vmemplan.models.base import register
from vmemplan.models.moe_blocks import SandwichNormLlama

__all__ = ["HyperCLOVAX"]


@register
class HyperCLOVAX(SandwichNormLlama):
    architectures = ("HyperCLOVAXForCausalLM",)
    #: two RMSNorms per layer, four with ``use_post_norm`` (HyperCLOVAXDecoderLayer.__init__
    #: adds post_norm1/post_norm2)
    sandwich_key = "use_post_norm"
