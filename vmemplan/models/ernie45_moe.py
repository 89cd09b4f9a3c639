"""ERNIE-4.5 MoE: vllm/model_executor/models/ernie45_moe.py::Ernie4_5_MoeForCausalLM (0.33.0).

* Ernie4_5_MoeAttention: fused ``qkv_proj`` with a bias when ``use_bias``, ``o_proj`` without
  one, ``head_dim`` from the config or ``hidden_size // num_attention_heads``;
* a layer is sparse when ``use_moe`` (default: ``moe_num_experts > 0``),
  ``(i + 1) % moe_layer_interval == 0`` and ``moe_layer_start_index <= i <= moe_layer_end_index``
  (end default: the last layer); a dense layer is Ernie4_5_MoeMLP of ``intermediate_size``
  (biases with ``use_bias``);
* Ernie4_5_MoeMoE: an fp32 GateLinear router ``[E, H]`` with an fp32
  ``e_score_correction_bias [E]``, ``moe_num_experts`` experts of ``moe_intermediate_size``
  (top ``moe_k``), shared experts as one MLP of ``moe_intermediate_size × moe_num_shared_experts``
  (no bias);
* the LM head tied to the embedding when ``tie_word_embeddings``.
"""

from __future__ import annotations

from vmemplan.models.base import register
from vmemplan.models.moe import MoEDecoder, _int

__all__ = ["Ernie45Moe"]


@register
class Ernie45Moe(MoEDecoder):
    """ERNIE-4.5-21B-A3B / 300B-A47B text models (vllm/model_executor/models/ernie45_moe.py::
    Ernie4_5_MoeForCausalLM, 0.33.0); see the module."""

    architectures = ("Ernie4_5_MoeForCausalLM",)
    router_dtype = "float32"
    router_correction_bias = True
    attn_o_bias = False
    dense_mlp_biases = True

    def qkv_bias(self) -> bool:
        return bool(self.config.text.get("use_bias", False))

    def mlp_bias(self) -> bool:
        return bool(self.config.text.get("use_bias", False))

    def num_experts(self) -> int:
        return _int(self.config.text, "moe_num_experts")

    def top_k(self) -> int:
        return _int(self.config.text, "moe_k", default=1)

    def shared_intermediate(self) -> int:
        return _int(self.config.text, "moe_num_shared_experts") * self.expert_intermediate()

    def is_moe_layer(self, index: int) -> bool:
        text = self.config.text
        e = self.num_experts()
        use_moe = text.get("use_moe", e > 0)
        start = _int(text, "moe_layer_start_index")
        end_raw = text.get("moe_layer_end_index")
        end = end_raw if isinstance(end_raw, int) and not isinstance(end_raw, bool) \
            else self.config.num_hidden_layers - 1
        interval = _int(text, "moe_layer_interval", default=1) or 1
        return bool(use_moe) and (index + 1) % interval == 0 and start <= index <= end
