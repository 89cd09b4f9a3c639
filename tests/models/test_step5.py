"""Step 5 (vLLM 0.33.0 vllm/models/step5/nvidia/model.py::Step5ForCausalLM): a worked example by
hand: a sliding layer, a DSA layer with its region-summary cache and CSA tail ring, and the
FlashInfer workspace counted with the weights."""

from __future__ import annotations

import pytest

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext
from vmemplan.core.kv_specs import CircularBufferSpec, FullAttentionSpec, SlidingWindowSpec
from vmemplan.laws.kv_groups import PoolContext, bytes_per_block, group_kv_cache_specs
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

CFG = {
    "architectures": ["Step5ForCausalLM"], "model_type": "step5", "torch_dtype": "bfloat16",
    "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 16, "num_attention_groups": 4,
    "head_dim": 192, "num_hidden_layers": 2, "max_seq_len": 1024, "vocab_size": 1024,
    "moe_intermediate_size": 64, "moe_num_experts": 4, "moe_top_k": 2, "use_head_wise_attn_gate": True,
    "use_moe_router_bias": True, "need_fp32_gate": True, "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"], "norm_dtype": "float32",
    "sparse_config": {"enabled": True, "index_tp_size": 4, "sparse_indexer_num_heads": 16},
}


def test_step5_by_hand() -> None:
    a = adapter_for(ModelConfig.from_dict(CFG))
    ctx = GraphContext(model_dtype="bfloat16", tensor_parallel_size=2)
    ts = {t.name: t for t in a.weight_tensors(ctx)}
    # layer 0 (window): fused [q, k, v, gate] = 8·192 + 2·(2·192) + 8 = 2312 rows a rank
    assert ts["self_attn.qkvg_proj"].rows == 2312
    # layer 1 (DSA): 2304 qkv rows + 2 provider groups · 4 indexer heads · 256 + K and Z 2·256 + 8 gate rows
    assert ts["self_attn.qkv_indexer_proj"].rows == 2304 + 2048 + 512 + 8
    assert ts["self_attn.sparse_indexer_w"].rows == 8 and ts["self_attn.ssmax_s"].rows == 16
    # one rotary table [1024, 192] for both layers, the indexer's [1024, 32 of 256]
    assert (ts["self_attn.rotary_emb.cos_sin_cache"].rows, ts["self_attn.rotary_emb.cos_sin_cache"].cols) == (1024, 192)
    assert ts["self_attn.sparse_indexer_rotary_emb.cos_sin_cache"].cols == 32
    assert ts["model.norm"].dtype == "float32"
    work = ts["attn.impl.adapter._workspace+_attention._int_workspace_buffer"]
    assert work.rows == (128 + 8) << 20 and work.dtype == "uint8"
    # layer 1 is the only MoE layer (every layer but the first): layer 0 keeps the dense MLP
    assert ts["mlp.gate_up_proj"].rows == 512 and ts["mlp.gate"].dtype == "float32"

    specs = a.kv_cache_specs(GraphContext(model_dtype="bfloat16", tensor_parallel_size=2, block_size=16))
    assert isinstance(specs["model.layers.0.self_attn.attn"], SlidingWindowSpec)
    main = specs["model.layers.1.self_attn.attn"]
    assert isinstance(main, FullAttentionSpec) and main.page_size_bytes == 16 * 2 * 384 * 2  # 24576
    assert main.stride_alignment_bytes == 8 * 2 * 384 * 2  # MultipleOf(8): an eight-token page, 12288
    summary = specs["model.layers.1.self_attn.attn.sparse_summary_cache"]
    assert summary.page_size_bytes == 16 // 8 * 256  # 512
    ring = specs["model.layers.1.self_attn.attn.csa_tail_ring"]
    assert isinstance(ring, CircularBufferSpec) and ring.page_size_bytes == 24576 and ring.head_size == 768
    assert a.kv_cache_layout(ctx) == "block_outermost"
    pool = PoolContext(max_model_len=1024, max_num_batched_tokens=1024, kv_cache_layout="block_outermost")
    groups = group_kv_cache_specs(specs, pool)
    # widest group: main + summary = 25088 B, rounded up to lcm(12288, 1024) = 12288 -> 36864
    assert bytes_per_block(groups, pool) == 36864


def test_step5_refusals() -> None:
    a = adapter_for(ModelConfig.from_dict(CFG))
    with pytest.raises(UsageError, match="query heads per KV group"):
        a.validate_parallel(GraphContext(tensor_parallel_size=8))  # 2 query heads per KV group
    with pytest.raises(UsageError, match="multiple of 8"):
        a.kv_cache_specs(GraphContext(model_dtype="bfloat16", block_size=12))
    dense = adapter_for(ModelConfig.from_dict({k: v for k, v in CFG.items() if k != "sparse_config"}))
    with pytest.raises(UsageError, match="sparse_config"):
        dense.weight_tensors(GraphContext())
