"""openPangu-Embedded (PanguEmbeddedForCausalLM): a Llama graph with an optional sandwich norm.

Mirrors vllm/model_executor/models/openpangu.py (0.33.0) on its dense, standard-attention path:
OpenPanguEmbeddedAttention (a fused ``qkv_proj``, ``o_proj``; both biased under
``attention_bias`` or ``bias``, the qkv bias overridden by ``qkv_bias`` when the config has it),
OpenPanguMLP (``gate_up_proj`` + ``down_proj``, biases from ``mlp_bias``) and
OpenPanguDecoderLayer: ``input_layernorm`` and ``post_attention_layernorm`` RMSNorms plus
``pre_mlp_layernorm`` and ``post_mlp_layernorm`` under ``sandwich_norm`` (four per layer).
Configs with MLA (``kv_lora_rank``), attention sinks (``param_sink_number``) or routed experts
are the MoE siblings (PanguUltraMoE / PanguProMoEV2), not this adapter.
"""

from __future__ import annotations

from vmemplan.models.base import register
from vmemplan.models.moe_blocks import SandwichNormLlama

__all__ = ["PanguEmbedded"]


@register
class PanguEmbedded(SandwichNormLlama):
    architectures = ("PanguEmbeddedForCausalLM",)
    #: two RMSNorms per layer, four with ``sandwich_norm`` (OpenPanguDecoderLayer.__init__ adds
    #: pre/post_mlp_layernorm)
    sandwich_key = "sandwich_norm"
