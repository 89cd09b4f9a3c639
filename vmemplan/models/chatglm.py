"""ChatGLM-2/3 and GLM-4 (the `ChatGLMModel` checkpoints): half-head rotary, fused `query_key_value` with a bias, embedding and output layer on every pipeline stage.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from vmemplan.models.base import register
from vmemplan.models.classic import ClassicLike
from vmemplan.models.moe_blocks import LinearBiasFlags

__all__ = ["ChatGLM"]


@register
class ChatGLM(LinearBiasFlags, ClassicLike):
    """vllm/model_executor/models/chatglm.py::ChatGLMForCausalLM (0.33.0), which the registry maps
    ``ChatGLMModel`` and ``ChatGLMForConditionalGeneration`` to; config class
    vllm/transformers_utils/configs/chatglm.py::ChatGLMConfig.

    GLMAttention: ``query_key_value`` (QKVParallelLinear, head size ``hidden_size //
    num_attention_heads``, KV heads ``multi_query_group_num`` with ``multi_query_attention``,
    else all heads) with a bias when ``add_bias_linear`` or ``add_qkv_bias``; ``dense`` with a
    bias when ``add_bias_linear``; one ``get_rope`` with ``partial_rotary_factor`` 0.5 over
    ``seq_length`` positions, so the cos/sin cache is ``[seq_length, head_dim / 2]``.  GLMMLP:
    ``dense_h_to_4h`` (MergedColumnParallelLinear, 2 x ``ffn_hidden_size``) and
    ``dense_4h_to_h``, biases when ``add_bias_linear``.  Two norms a layer, RMSNorm when
    ``rmsnorm`` else LayerNorm, and the encoder's ``final_layernorm`` when ``post_layer_norm``.
    ChatGLMModel builds ``embedding`` and ``output_layer`` (both ``padded_vocab_size`` rows) on
    every stage; ``tie_word_embeddings`` makes the output layer the embedding's weight.
    """

    architectures = ("ChatGLMModel", "ChatGLMForConditionalGeneration")
    tied_head_default = False
    rotary_fraction = 0.5
    linear_bias_key, qkv_bias_key = "add_bias_linear", "add_qkv_bias"

    def normalize_config(self, config: Any) -> Any:
        text = config.text
        changes: dict[str, Any] = {"head_dim": config.hidden_size // config.num_attention_heads}
        vocab = text.get("padded_vocab_size")
        if isinstance(vocab, int) and not isinstance(vocab, bool):
            changes["vocab_size"] = vocab
        if not text.get("multi_query_attention", False):
            changes["num_key_value_heads"] = config.num_attention_heads
        else:
            changes["num_key_value_heads"] = int(text.get("multi_query_group_num", 1))
        ffn = text.get("ffn_hidden_size")
        if isinstance(ffn, int) and not isinstance(ffn, bool):
            changes["intermediate_size"] = ffn
        return dataclasses.replace(config, **changes)

    @property
    def norm_kind(self) -> str:  # type: ignore[override]
        return "rms" if self.config.text.get("rmsnorm", True) else "layer"

    def has_final_norm(self) -> bool:
        return bool(self.config.text.get("post_layer_norm", True))

    def rotary_positions(self) -> int:
        seq = self.config.text.get("seq_length", 2048)
        return seq if isinstance(seq, int) and not isinstance(seq, bool) else 2048

    def derived_max_model_len(self) -> int:
        """``seq_length`` (ChatGLMConfig also sets ``max_position_embeddings`` to it), the key
        vllm/transformers_utils/model_arch_config_convertor.py::derive_max_model_len_and_key
        finds (0.33.0)."""
        return self.rotary_positions()
