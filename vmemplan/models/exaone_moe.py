"""EXAONE MoE (K-EXAONE): vllm/model_executor/models/exaone_moe.py::ExaoneMoeForCausalLM (0.33.0),
registered as ``ExaoneMoeForCausalLM`` and ``ExaoneMoEForCausalLM``.

* ExaoneMoeAttention: fused ``qkv_proj`` / ``o_proj`` with biases when ``attention_bias`` (or
  ``bias``), per-head ``q_norm`` / ``k_norm`` RMSNorms, a window on the ``sliding_attention``
  layers of ``layer_types`` (``sliding_windows[i]`` when the config lists one per layer, else
  ``sliding_window``); every layer builds the same rotary module (get_rope caches it), so one
  cos/sin cache;
* ``mlp_layer_types[i] == "sparse"`` layers (the config class derives the list from
  ``first_k_dense_replace`` when absent) hold ExaoneMoe: a GateLinear router ``[E, H]`` at the
  model dtype, an fp32 ``e_score_correction_bias [E]``, ``num_experts`` experts of
  ``moe_intermediate_size`` and shared experts as one gated MLP of
  ``moe_intermediate_size × num_shared_experts`` (no bias); the others a gated MLP of
  ``intermediate_size`` (biases with ``mlp_bias``);
* the embedding on the first stage (and on the last when tied), the LM head tied when
  ``tie_word_embeddings``.  The MTP layers (exaone_moe_mtp.py) load only when they drive
  speculation and are not modelled here.
"""

from __future__ import annotations

from vmemplan.models.base import register
from vmemplan.models.moe import MoEDecoder, _int

__all__ = ["ExaoneMoe"]


@register
class ExaoneMoe(MoEDecoder):
    """K-EXAONE-236B-A23B and its family."""

    architectures = ("ExaoneMoeForCausalLM", "ExaoneMoEForCausalLM")
    qk_norm = True
    router_correction_bias = True
    dense_mlp_biases = True  # under mlp_bias

    def num_experts(self) -> int:
        return _int(self.config.text, "num_experts")

    def shared_intermediate(self) -> int:
        return _int(self.config.text, "num_shared_experts") * self.expert_intermediate()

    def is_moe_layer(self, index: int) -> bool:
        types = self.config.text.get("mlp_layer_types")
        if isinstance(types, list) and types:
            return index < len(types) and types[index] == "sparse"
        return index >= _int(self.config.text, "first_k_dense_replace", default=1)

    def sliding_window_for_layer(self, index: int) -> int | None:
        text = self.config.text
        types = text.get("layer_types")
        if not (isinstance(types, list) and index < len(types)) or types[index] == "full_attention":
            return None
        per_layer = text.get("sliding_windows")
        w = per_layer[index] if isinstance(per_layer, list) and index < len(per_layer) else text.get("sliding_window")
        return int(w) if isinstance(w, int) and not isinstance(w, bool) and w > 0 else None
