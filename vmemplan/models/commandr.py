"""Command-R (Cohere, Cohere2): one norm per parallel attention+MLP layer, the embedding as the LM head, Cohere2's sliding-window layers.
"""

from __future__ import annotations

from typing import Any

from vmemplan.models.base import register
from vmemplan.models.classic import ClassicLike

__all__ = ["Cohere"]


@register
class Cohere(ClassicLike):
    """vllm/model_executor/models/commandr.py::CohereForCausalLM (0.33.0), which the registry maps
    both ``CohereForCausalLM`` and ``Cohere2ForCausalLM`` to.

    CohereDecoderLayer: ``qkv_proj`` / ``o_proj`` without biases, the gated ``gate_up_proj`` /
    ``down_proj`` MLP, one ``input_layernorm`` (commandr's own LayerNorm or RMSNorm, a weight
    only) feeding attention and MLP in parallel; ``q_norm`` ``[heads/tp, head_dim]`` and
    ``k_norm`` ``[kv_heads/tp, head_dim]`` when ``use_qk_norm``.  CohereModel builds
    ``embed_tokens`` and ``norm`` on every stage, and compute_logits uses ``embed_tokens``: no
    ``lm_head`` tensor.  get_rope's ``max_position`` is ``model_max_length`` when set, else
    ``max_position_embeddings``.  Cohere2 (``Cohere2Config``): the layers ``layer_types`` marks
    ``sliding_attention`` (by default all but every 4th, from ``sliding_window_pattern``) get
    ``per_layer_sliding_window = sliding_window + 1``; the others are full attention.
    """

    architectures = ("CohereForCausalLM", "Cohere2ForCausalLM")
    norms_per_layer = 1
    tied_head = True
    qk_norm_shape = "full"
    attn_qkv_bias = attn_o_bias = mlp_has_bias = False

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.qk_norm = bool(self.config.text.get("use_qk_norm", False))

    def _model_max_length(self) -> int | None:
        value = self.config.text.get("model_max_length")
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    def rotary_positions(self) -> int:
        return self._model_max_length() or super().rotary_positions()

    def derived_max_model_len(self) -> int:
        """``model_max_length`` when the config has it (it wins over the other length keys in
        vllm/transformers_utils/model_arch_config_convertor.py::derive_max_model_len_and_key,
        0.33.0), else the generic derivation."""
        return self._model_max_length() or super().derived_max_model_len()

    def _cohere2(self) -> bool:
        return self.config.architecture == "Cohere2ForCausalLM" or self.config.model_type == "cohere2"

    def layer_types(self) -> list[str]:
        """Cohere2Config.__post_init__ (transformers 5.x): ``layer_types``, else sliding on every
        layer but each ``sliding_window_pattern``-th (default 4)."""
        text = self.config.text
        n = self.config.num_hidden_layers
        types = text.get("layer_types")
        if isinstance(types, list) and len(types) == n:
            return [str(t) for t in types]
        pattern = text.get("sliding_window_pattern", 4)
        pattern = pattern if isinstance(pattern, int) and not isinstance(pattern, bool) and pattern > 0 else 4
        return ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n)]

    def sliding_window_for_layer(self, index: int) -> int | None:
        if not self._cohere2():
            return super().sliding_window_for_layer(index)
        window = self.config.text.get("sliding_window", 4096)
        if self.layer_types()[index] != "sliding_attention" or not isinstance(window, int) or window <= 0:
            return None
        return window + 1
