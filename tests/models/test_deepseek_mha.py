"""DeepSeek-MoE v1 (``DeepseekForCausalLM``, vLLM 0.33.0 deepseek_v2.py with use_mha): plain
attention plus DeepSeek's MoE block, a worked example by hand."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.core.kv_specs import FullAttentionSpec
from vmemplan.core.units import dtype_bytes
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

TINY = {
    "architectures": ["DeepseekForCausalLM"], "model_type": "deepseek", "torch_dtype": "bfloat16",
    "vocab_size": 128, "hidden_size": 64, "intermediate_size": 128, "moe_intermediate_size": 16,
    "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 4,
    "n_routed_experts": 4, "n_shared_experts": 2, "num_experts_per_tok": 2, "first_k_dense_replace": 1,
    "moe_layer_freq": 1, "max_position_embeddings": 256, "rope_theta": 10000, "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False, "attention_bias": False, "hidden_act": "silu", "scoring_func": "softmax",
}


def _bytes(adapter, ctx: GraphContext) -> int:
    return sum(t.elements * dtype_bytes(t.dtype or "bfloat16") for t in adapter.weight_tensors(ctx))


def test_deepseek_moe_v1_weights_and_cache_by_hand() -> None:
    a = adapter_for(ModelConfig.from_dict(TINY))
    assert type(a).__name__ == "DeepseekMoEMHA"
    ctx = GraphContext(tensor_parallel_size=1, model_dtype="bfloat16")
    # elements: embedding and LM head 128 x 64 each; final norm 64
    # attention, 3 layers: qkv (3 x 4 heads x 16) x 64 + o_proj 64 x 64 + two norms 2 x 64 = 16512
    # layer 0 dense MLP (intermediate 128): 2 x 128 x 64 + 64 x 128 = 24576
    # layers 1-2 MoE: router 4 x 64, experts 4 x (2 x 16 x 64 + 64 x 16) = 12288,
    #   shared MLP of 2 x 16 = 32: 2 x 32 x 64 + 64 x 32 = 6144 -> 18688 a layer
    # rotary cache 256 positions x head_dim 16
    elements = 2 * 8192 + 64 + 3 * 16512 + 24576 + 2 * 18688 + 256 * 16
    assert _bytes(a, ctx) == 2 * elements + 3 * 16  # bf16, plus four fp32 scales per Attention layer
    specs = a.kv_cache_specs(ctx)
    assert len(specs) == 3
    spec = specs["model.layers.2.self_attn.attn"]
    assert type(spec) is FullAttentionSpec and spec.num_kv_heads == 4 and spec.head_size == 16


def test_moe_layer_freq_and_missing_experts() -> None:
    a = adapter_for(ModelConfig.from_dict({**TINY, "num_hidden_layers": 6, "moe_layer_freq": 2}))
    assert [a.is_moe_layer(i) for i in range(6)] == [False, False, True, False, True, False]
    dense = adapter_for(ModelConfig.from_dict({**TINY, "n_routed_experts": None}))
    assert not any(dense.is_moe_layer(i) for i in range(3))
