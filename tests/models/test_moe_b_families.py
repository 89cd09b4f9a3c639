"""AfMoE, Cohere2-MoE and Step3-text (vLLM 0.33.0): worked examples by hand."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.core.kv_specs import FullAttentionSpec, SlidingWindowSpec
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

_COMMON = {"torch_dtype": "bfloat16", "vocab_size": 1000, "hidden_size": 256, "intermediate_size": 512,
           "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "max_position_embeddings": 1024,
           "rms_norm_eps": 1e-5}


def _names(adapter, **ctx) -> dict[str, list]:
    out: dict[str, list] = {}
    for t in adapter.weight_tensors(GraphContext(**ctx)):
        out.setdefault(t.name, []).append(t)
    return out


def test_afmoe_layer_types_from_global_attn_every_n_layers() -> None:
    a = adapter_for(ModelConfig.from_dict({
        **_COMMON, "architectures": ["AfmoeForCausalLM"], "model_type": "afmoe", "num_hidden_layers": 8,
        "global_attn_every_n_layers": 4, "sliding_window": 128, "num_dense_layers": 2, "num_experts": 8,
        "num_experts_per_tok": 2, "moe_intermediate_size": 64, "num_shared_experts": 1}))
    specs = a.kv_cache_specs(GraphContext())
    # layers 3 and 7 are full attention, the six others slide
    kinds = [type(specs[f"model.layers.{i}.self_attn.attn"]) for i in range(8)]
    assert kinds == [SlidingWindowSpec] * 3 + [FullAttentionSpec] + [SlidingWindowSpec] * 3 + [FullAttentionSpec]
    ts = _names(a)
    # the sigmoid output gate [4·64, 256]; an fp32 router; 4 norms a layer; a shared expert of 64
    assert (ts["self_attn.gate_proj"][0].rows, ts["self_attn.gate_proj"][0].count) == (256, 8)
    assert ts["mlp.gate"][0].dtype == "float32" and ts["mlp.gate"][0].count == 6
    assert ts["input_layernorm+post_attention_layernorm"][0].count == 32
    assert ts["mlp.shared_expert.gate_up_proj"][0].rows == 128


def test_cohere2_moe_window_one_wider_and_no_head() -> None:
    a = adapter_for(ModelConfig.from_dict({
        **_COMMON, "architectures": ["Cohere2MoeForCausalLM"], "model_type": "cohere2_moe", "num_hidden_layers": 4,
        "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"],
        "mlp_layer_types": ["dense", "sparse", "sparse", "sparse"], "sliding_window": 4096, "num_experts": 8,
        "num_experts_per_tok": 2, "num_shared_experts": 0, "prefix_dense_intermediate_size": 1024}))
    specs = a.kv_cache_specs(GraphContext())
    assert specs["model.layers.0.self_attn.attn"].sliding_window == 4097
    assert type(specs["model.layers.3.self_attn.attn"]) is FullAttentionSpec
    ts = _names(a, pipeline_parallel_size=2, pipeline_rank=1)
    assert "lm_head" not in ts and "model.embed_tokens" in ts  # embedding on every stage, logits from it
    dense = _names(a)["mlp.gate_up_proj"][0]
    assert (dense.rows, dense.count) == (2048, 1)


def test_step3_text_shared_query_and_listed_moe_layers() -> None:
    a = adapter_for(ModelConfig.from_dict({
        **_COMMON, "architectures": ["Step3TextForCausalLM"], "model_type": "step3_text", "num_hidden_layers": 4,
        "num_attention_groups": 1, "num_key_value_heads": 1, "share_q_dim": 128, "moe_layers_enum": "2,3",
        "moe_num_experts": 4, "moe_top_k": 2, "moe_intermediate_size": 64, "share_expert_dim": 64,
        "max_position_embedding": 2048}))
    ts = _names(a, tensor_parallel_size=2)
    assert (ts["self_attn.qkv_proj"][0].rows, ts["self_attn.qkv_proj"][0].cols) == (128 + 2 * 64, 256)  # replicated
    assert (ts["self_attn.wq"][0].rows, ts["self_attn.wq"][0].cols) == (2 * 64, 128)
    assert ts["mlp.gate_up_proj"][0].count == 2 and ts["mlp.experts.w13_weight"][0].allocations == 2
    assert (ts["rotary_emb.cos_sin_cache"][0].rows, ts["rotary_emb.cos_sin_cache"][0].cols) == (2048, 64)
    assert a.kv_cache_specs(GraphContext(tensor_parallel_size=2))["model.layers.0.self_attn.attn"].num_kv_heads == 1
