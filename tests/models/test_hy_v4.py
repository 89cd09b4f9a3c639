"""HY V4 (vllm/models/hy_v4/nvidia/model.py, 0.33.0): worked examples by hand."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

TINY = {
    "architectures": ["HYV4ForCausalLM"], "model_type": "hy_v4", "torch_dtype": "bfloat16",
    "vocab_size": 1000, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 4, "max_position_embeddings": 1024,
    "q_lora_rank": 64, "kv_lora_rank": 32, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16,
    "n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 64, "n_shared_experts": 1,
    "index_topk": 16, "index_n_heads": 2, "index_head_dim": 128, "hc_mult": 4,
    "layer_types": ["indexed_attention"] * 4, "indexer_types": ["full", "shared", "full", "shared"],
    "mlp_layer_types": ["dense", "sparse", "sparse", "sparse"], "tie_word_embeddings": False,
    "rope_parameters": {"rope_type": "default", "rope_theta": 1e4},
}


def _tensors(ctx: GraphContext, **changes) -> dict:
    a = adapter_for(ModelConfig.from_dict({**TINY, **changes}))
    return {t.name: t for t in a.weight_tensors(ctx)}, a


def test_indexers_and_caches_by_hand() -> None:
    ts, a = _tensors(GraphContext(max_num_batched_tokens=64))
    # two 'full' indexer layers build an indexer and its 132-byte K cache
    assert ts["self_attn.indexer.wq_b"].count == 2
    specs = a.kv_cache_specs(GraphContext())
    assert sorted(n for n in specs if "indexer" in n) == [
        "model.layers.0.self_attn.indexer.k_cache", "model.layers.2.self_attn.indexer.k_cache"]
    assert sum(n.endswith(".self_attn.attn") for n in specs) == 4
    # each sparse layer's own index group: [64 + 1, 16 + 1] int32
    g = ts["self_attn.mla_attn.index_group.physical_topk_indices+valid_topk_counts"]
    assert (g.rows, g.cols, g.count, g.dtype) == (65, 17, 4, "int32")
    assert (ts["model.topk_indices_buffer"].rows, ts["model.topk_indices_buffer"].cols) == (64, 16)


def test_vllm_config_defaults_by_hand() -> None:
    # absent enable_ihc / gated_mla / learnable_sink are True (vLLM's HYV4Config)
    ts, _ = _tensors(GraphContext(tensor_parallel_size=2))
    # elementwise gate: heads / tp × v_head_dim = 2 × 16 rows; sink: 2 fp32 per layer
    assert ts["self_attn.linear_gate"].rows == 32
    assert ts["self_attn.learnable_sink_param"].rows == 2
    # iHC: hc_fn [2·4, 4·256] fp32, two a layer; the head [4, 4·256]
    hc = ts["hc_{attn,mlp}_layer.hc_pre.hc_fn"]
    assert (hc.rows, hc.cols, hc.count, hc.dtype) == (8, 1024, 8, "float32")
    assert ts["model.hc_head.hc_head_fn"].rows == 4
    # the router is fp32, one per MoE layer (3)
    assert ts["mlp.gate"].dtype == "float32" and ts["mlp.gate"].count == 3
    off, _ = _tensors(GraphContext(), enable_ihc=False, gated_mla=False, learnable_sink=False)
    assert not any(k.startswith(("hc_", "model.hc_head", "self_attn.linear_gate", "self_attn.learnable")) for k in off)
