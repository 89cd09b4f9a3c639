"""Qwen4-Exp (vLLM 0.33.0 vllm/models/qwen4_exp/nvidia/model.py::Qwen4ExpForCausalLM): a worked
example by hand."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.core.kv_specs import CircularBufferSpec, MambaSpec, MLAAttentionSpec
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

CFG = {
    "architectures": ["Qwen4ExpForCausalLM"], "model_type": "qwen4_exp_text", "dtype": "bfloat16",
    "vocab_size": 1024, "hidden_size": 128, "num_hidden_layers": 4, "full_attention_interval": 4,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "max_position_embeddings": 4096,
    "output_gate_type": "sigmoid", "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "partial_rotary_factor": 0.25},
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 32, "linear_value_head_dim": 32, "linear_num_key_heads": 2,
    "linear_num_value_heads": 4, "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 32, "hc_count": 4, "hc_lowrank": 20, "ple_layer_ids": [2], "ple_embed_dim": 128,
    "ple_conv_kernel_size": 4, "ngram_size": 3, "heads_per_ngram": 2, "indexer_n_heads": 2, "indexer_kv_heads": 1,
    "indexer_head_dim": 64, "indexer_budget": 256, "indexer_compress_ratio": 4, "eos_token_id": 1,
}


def test_qwen4_exp_by_hand() -> None:
    a = adapter_for(ModelConfig.from_dict(CFG))
    ctx = GraphContext(tensor_parallel_size=2, max_num_batched_tokens=1024)
    ts = {t.name: t for t in a.weight_tensors(ctx)}
    # hyper-connections: down+inject rows 20 + 4 -> 32 (multiple of 16) over hc·hidden = 512, 2 a layer
    d = ts["hyper_connection.input_mix_weight_down_block_inject"]
    assert (d.rows, d.cols, d.count) == (32, 512, 8)
    # no layer norms: neither input_layernorm nor a final model.norm
    assert not any("layernorm" in n and "indexer" not in n for n in ts) and "model.norm" not in ts
    # qkv: gated q 2·4·64 / 2 + 2 · (2 / 2)·64 = 384 rows a rank; the indexer's 2·64 + 64 replicated
    assert ts["self_attn.qkv_proj"].rows == 384 and ts["self_attn.qkv_proj[indexer, replicated]"].rows == 192
    # top-k buffer [1024, 256 + 4] int32; PLE prefetch ids [1024, (3 - 1)·2] int64
    assert (ts["self_attn.topk_indices_buffer"].rows, ts["self_attn.topk_indices_buffer"].cols) == (1024, 260)
    assert ts["ple.ple_embedding._prefetch_ids"].cols == 4 and ts["ple.kv_proj"].rows == 512 + 128
    specs = a.kv_cache_specs(GraphContext(tensor_parallel_size=2, block_size=64))
    ple = specs["model.layers.1.ple"]  # one-based ple_layer_ids [2]
    assert isinstance(ple, MambaSpec) and ple.tp_replicated
    assert ple.unpadded_page_size_bytes == (3 * 3) * 512 * 2  # (K - 1)·ngram_size rows of hc·hidden, bf16
    ring = specs["model.layers.3.self_attn.indexer.raw_key_cache"]
    assert isinstance(ring, CircularBufferSpec) and ring.block_size == 4 and ring.page_size_bytes == 4 * 64 * 2
    comp = specs["model.layers.3.self_attn.indexer.compressed_key_cache"]
    attn = specs["model.layers.3.self_attn.attn"]
    assert isinstance(comp, MLAAttentionSpec) and comp.block_size == attn.block_size
    assert comp.page_size_bytes == attn.block_size // 4 * 64 * 2
