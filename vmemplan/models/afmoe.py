"""AfMoE (Arcee Trinity): a sigmoid-routed MoE with a gated attention output, four norms a
layer and rotary embeddings only on its sliding-window layers.

Mirrors vllm/model_executor/models/afmoe.py (0.33.0):

* ``AfmoeAttention``: ``qkv_proj`` / ``o_proj`` as Llama's, a ColumnParallel ``gate_proj
  [heads·head_dim, H]`` (sigmoid output gate), per-head q/k RMSNorms; ``get_rope`` only on
  ``sliding_attention`` layers (one cached table), and the window ``sliding_window`` there;
* ``AfmoeDecoderLayer``: input, post-attention, pre-MLP and post-MLP RMSNorms; a LlamaMLP for
  the first ``num_dense_layers`` layers, ``AfmoeMoE`` after them;
* ``AfmoeMoE``: a ``GateLinear`` router in fp32, an fp32 ``expert_bias [E]``, the fused
  experts of ``moe_intermediate_size`` and ``num_shared_experts × moe_intermediate_size``
  of shared expert (a LlamaMLP);
* ``AfmoeForCausalLM``: an LM head of its own on the last stage (never tied).
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext, WeightTensor
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import register
from vmemplan.models.moe import MoEDecoder, _int

__all__ = ["Afmoe"]


@register
class Afmoe(MoEDecoder):
    """AfmoeForCausalLM (vllm/model_executor/models/afmoe.py, 0.33.0); see the module."""

    architectures = ("AfmoeForCausalLM",)
    qk_norm = True
    norms_per_layer = 4
    tied_head = False
    router_dtype = "float32"
    router_correction_bias = True
    attn_qkv_bias = attn_o_bias = mlp_has_bias = False

    def __init__(self, config: ModelConfig) -> None:
        text = config.text
        if not isinstance(text.get("layer_types"), list) and config.text is config.raw:
            # transformers' AfmoeConfig.__post_init__: every global_attn_every_n_layers-th layer
            # is full attention, the others slide
            every = _int(text, "global_attn_every_n_layers", default=4) or 4
            types = ["sliding_attention" if (i + 1) % every else "full_attention"
                     for i in range(config.num_hidden_layers)]
            config = ModelConfig.from_dict({**config.raw, "layer_types": types})
        super().__init__(config)

    def shared_intermediate(self) -> int:
        return _int(self.config.text, "num_shared_experts") * self.expert_intermediate()

    def is_moe_layer(self, index: int) -> bool:
        return index >= _int(self.config.text, "num_dense_layers")

    def is_sliding(self, index: int) -> bool:
        lt = self.config.text.get("layer_types")
        return isinstance(lt, list) and index < len(lt) and lt[index] == "sliding_attention"

    def weight_tensors(self, ctx: GraphContext) -> list[WeightTensor]:
        out = super().weight_tensors(ctx)
        span = self.rank_span(ctx)
        if span.layers:
            rows = self.config.num_attention_heads * self.config.head_dim
            out.append(WeightTensor("self_attn.gate_proj", "linear", rows // span.tp, span.hidden, span.layers, True,
                                    in_features_full=span.hidden, out_features_full=rows))
        if not any(self.is_sliding(i) for i in range(span.start, span.end)):
            out = [t for t in out if t.name != "rotary_emb.cos_sin_cache"]
        return out

