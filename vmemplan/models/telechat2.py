"""TeleChat2 (TeleChat2ForCausalLM): a Llama graph with biases on o_proj and down_proj only.

Mirrors vllm/model_executor/models/telechat2.py (0.33.0): TeleChat2Model builds a LlamaModel
with ``bias`` and ``mlp_bias`` forced on, then drops the bias of every layer's ``qkv_proj`` and
``gate_up_proj`` (``register_parameter("bias", None)``), so the self-attention ``dense``
(o_proj) and the MLP ``down_proj`` keep theirs.  The config's GPT-style names
(``n_layer``, ``n_head``, ``ffn_hidden_size``, ``layer_norm_epsilon``) are the ones
TeleChat2Model maps through ``attribute_map``: they win over any Llama-named key (or library
default) the config carries, so the adapter reads them first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.models.base import register
from vmemplan.models.declared import remap_config
from vmemplan.models.dense import LlamaLike

if TYPE_CHECKING:
    from vmemplan.model_config import ModelConfig

__all__ = ["TeleChat2"]


@register
class TeleChat2(LlamaLike):
    """TeleChat2ForCausalLM: o_proj and down_proj biased, qkv_proj and gate_up_proj not."""

    architectures = ("TeleChat2ForCausalLM",)
    attn_qkv_bias = False
    attn_o_bias = True
    mlp_has_bias = True
    #: TeleChat2Model.__init__'s attribute_map (vllm/model_executor/models/telechat2.py, 0.33.0)
    attribute_map = {"num_hidden_layers": "n_layer", "num_attention_heads": "n_head",
                     "intermediate_size": "ffn_hidden_size"}

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(remap_config(config, self.attribute_map))

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        # TeleChat2Model.__init__ removes the gate_up_proj bias LlamaMLP was built with
        return [t for t in super().weight_tensors(ctx) if t.name != "mlp.gate_up_proj.bias"]
