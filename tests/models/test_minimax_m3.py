"""MiniMax M3 (vllm/models/minimax_m3/nvidia/model.py, 0.33.0): worked examples by hand."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.core.kv_specs import FullAttentionSpec, MLAAttentionSpec
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

TEXT = {
    "model_type": "minimax_m3_text", "hidden_size": 256, "intermediate_size": 64, "dense_intermediate_size": 512,
    "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64,
    "vocab_size": 1000, "max_position_embeddings": 2048, "partial_rotary_factor": 0.5, "rope_theta": 1e6,
    "num_local_experts": 8, "num_experts_per_tok": 2, "n_shared_experts": 1, "use_routing_bias": True,
    "moe_layer_freq": [0, 1, 1, 1], "hidden_act": "swigluoai", "tie_word_embeddings": False,
    "sparse_attention_config": {"sparse_attention_freq": [0, 0, 1, 1], "sparse_index_dim": 64,
                                "sparse_num_index_heads": 2, "sparse_topk_blocks": 16, "sparse_block_size": 128},
}
CFG = {"architectures": ["MiniMaxM3SparseForCausalLM"], "model_type": "minimax_m3_vl", "text_config": TEXT}


def test_minimax_m3_by_hand() -> None:
    a = adapter_for(ModelConfig.from_dict(CFG))
    ts = {t.name: t for t in a.weight_tensors(GraphContext(tensor_parallel_size=4, max_num_batched_tokens=10))}
    # TP 4 > 2 KV heads: 1 KV head a rank; sparse qkv = 2·64 + 2·64 + 1·64 (index_q) + 64 (index_k)
    assert ts["self_attn.qkv_proj"].rows == 256 and ts["self_attn.qkv_proj"].count == 2
    assert ts["self_attn.qkv_proj[+index_q,index_k]"].rows == 384
    # rotary over half the head; top-k buffer 10 → 12 tokens × max(1, 2 // 4) head × 16 blocks
    assert ts["rotary_emb.cos_sin_cache"].cols == 32
    assert (ts["model.topk_indices_buffer"].rows, ts["model.topk_indices_buffer"].cols) == (12, 16)
    assert ts["block_sparse_moe.gate"].count == 3 and ts["mlp.gate_up_proj"].count == 1
    specs = a.kv_cache_specs(GraphContext(block_size=128))
    assert type(specs["model.layers.0.self_attn.attn"]) is FullAttentionSpec
    idx = specs["model.layers.2.self_attn.attn.index_cache"]
    assert isinstance(idx, MLAAttentionSpec) and idx.head_size == 64 and idx.cache_role == "indexer"
    assert "model.layers.1.self_attn.attn.index_cache" not in specs
    assert a.resolve_block_size(GraphContext(), user_block_size=None, default=16) == 128
