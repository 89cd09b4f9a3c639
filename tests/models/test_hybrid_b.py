"""Worked examples for models/lfm2_moe.py, zamba2.py and olmo_hybrid.py (figures computed by
hand from vLLM 0.33.0's shape rules)."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.model_config import ModelConfig
from vmemplan.models.lfm2_moe import Lfm2Moe
from vmemplan.models.olmo_hybrid import OlmoHybrid
from vmemplan.models.zamba2 import Zamba2, zamba2_attention_index


def _by_name(tensors):
    return {t.name: t for t in tensors}


def test_zamba2_attention_names_follow_the_shared_block_numbering() -> None:
    # Zamba2Attention: block b = k % M numbers its uses from b * (H + M - 1) // M.
    # H = 9, M = 2: block 0 takes 0..4 (k = 0, 2, 4, 6, 8), block 1 takes 5..8 (k = 1, 3, 5, 7)
    assert [zamba2_attention_index(k, 9, 2) for k in range(9)] == [0, 5, 1, 6, 2, 7, 3, 8, 4]
    assert [zamba2_attention_index(k, 6, 1) for k in range(6)] == list(range(6))


def _zamba2() -> Zamba2:
    return Zamba2(ModelConfig.from_dict({
        "architectures": ["Zamba2ForCausalLM"], "model_type": "zamba2", "hidden_size": 64,
        "num_hidden_layers": 4, "layers_block_type": ["mamba", "hybrid", "linear_attention", "hybrid"],
        "num_mem_blocks": 2, "num_attention_heads": 4, "num_key_value_heads": 4, "attention_hidden_size": 128,
        "attention_head_dim": 32, "intermediate_size": 256, "adapter_rank": 8, "n_mamba_heads": 2,
        "mamba_headdim": 64, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_ngroups": 1, "mamba_expand": 2,
        "vocab_size": 1000, "use_shared_attention_adapter": True, "use_mem_rope": True,
        "max_position_embeddings": 4096, "torch_dtype": "bfloat16",
    }))


def test_zamba2_hybrid_layers_cache_attention_and_mamba_state() -> None:
    a = _zamba2()
    specs = a.kv_cache_specs(GraphContext(model_dtype="bfloat16", max_model_len=4096, block_size=16))
    # two hybrid layers -> model.attn.0 / model.attn.1; mixers at str(H + i): 2..5
    assert sorted(specs) == ["2.mixer", "3.mixer", "4.mixer", "5.mixer", "model.attn.0", "model.attn.1"]
    # one KV head per query head (Attention gets no num_kv_heads), head 32
    assert specs["model.attn.0"].num_kv_heads == 4 and specs["model.attn.0"].head_size == 32


def test_zamba2_shared_blocks_are_held_once_and_adapters_once_per_use() -> None:
    w = _by_name(_zamba2().weight_tensors(GraphContext(model_dtype="bfloat16", tensor_parallel_size=2)))
    # qkv over the 2h-wide concat: 3 x (4/2 heads x 32) rows x 128, one per shared block (M = 2)
    qkv = w["shared.self_attn.qkv_proj"]
    assert (qkv.rows, qkv.cols, qkv.count) == (192, 128, 2)
    assert w["shared.input_layernorm"].rows == 128
    # LoRA A gathers its output but is still column-split: rank 8 / tp 2 = 4 rows; 3 per use
    a_q = w["self_attn.linear_q/k/v_adapter.A"]
    assert (a_q.rows, a_q.cols, a_q.count) == (4, 128, 6)
    # MLP adapter B: MergedColumnParallelLinear(rank, [I, I]) -> 2 x 256 / 2 rows x 8
    b = w["feed_forward.gate_up_proj_adapter.B"]
    assert (b.rows, b.cols, b.count) == (256, 8, 2)
    # each hybrid layer's ReplicatedLinear stays whole; four fp32 scales per use
    assert (w["linear"].rows, w["linear"].count) == (64, 2)
    assert w["model.attn.k/v/q/prob_scale"].count == 8
    # a Mamba-2 mixer in every layer, hybrid ones included
    assert w["mamba.in_proj"].count == 4
    assert "lm_head" not in w  # tied


def test_lfm2_moe_dense_prefix_then_routed_experts() -> None:
    types = ["conv", "full_attention", "conv", "conv"]
    a = Lfm2Moe(ModelConfig.from_dict({
        "architectures": ["Lfm2MoeForCausalLM"], "model_type": "lfm2_moe", "hidden_size": 256,
        "num_hidden_layers": 4, "layer_types": types, "num_attention_heads": 4, "num_key_value_heads": 2,
        "intermediate_size": 1024, "moe_intermediate_size": 128, "num_dense_layers": 2, "num_experts": 8,
        "num_experts_per_tok": 2, "use_expert_bias": True, "conv_L_cache": 3, "vocab_size": 1000,
        "max_position_embeddings": 8192, "torch_dtype": "bfloat16",
    }))
    w = _by_name(a.weight_tensors(GraphContext(model_dtype="bfloat16", tensor_parallel_size=2)))
    # layers 0-1: Lfm2MoeMlp with ff_dim = intermediate_size (no LFM2 auto-adjust): 2 x 1024 / 2 rows
    assert (w["feed_forward.w13"].rows, w["feed_forward.w13"].count) == (1024, 2)
    # layers 2-3: 8 experts, w13 2 x 128 / 2 rows each; fp32 score bias of 8 per layer
    ex = w["feed_forward.experts.w13"]
    assert (ex.rows, ex.count) == (128, 16)
    bias = w["feed_forward.gate.e_score_correction_bias"]
    assert (bias.rows, bias.count, bias.dtype) == (8, 2, "float32")
    # the short conv is hidden_size wide: conv1d 256 / 2 channels
    assert w["short_conv.conv1d"].rows == 128


def test_olmo_hybrid_norms_span_every_head_and_gdn_state() -> None:
    a = OlmoHybrid(ModelConfig.from_dict({
        "architectures": ["OlmoHybridForCausalLM"], "model_type": "olmo_hybrid", "hidden_size": 512,
        "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4, "intermediate_size": 1024,
        "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
        "linear_num_key_heads": 4, "linear_num_value_heads": 4, "linear_key_head_dim": 32,
        "linear_value_head_dim": 64, "linear_conv_kernel_dim": 4, "vocab_size": 1000,
        "max_position_embeddings": 4096, "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
        "torch_dtype": "bfloat16",
    }))
    ctx = GraphContext(model_dtype="bfloat16", tensor_parallel_size=2)
    w = _by_name(a.weight_tensors(ctx))
    # q_norm over the whole hidden size, k_norm over all 4 KV heads x 64 (after an all-gather)
    assert w["self_attn.q_norm"].rows == 512 and w["self_attn.k_norm"].rows == 256
    # in_proj_qkvg: (2 x 4 x 32 + 2 x 4 x 64) / 2 rows
    assert w["linear_attn.in_proj_qkvg"].rows == 384
    # conv (3 x (2 x 128 + 256) / 2) + recurrent (2 x 64 x 32), bf16
    conv, rec = a.mamba_state(ctx)
    assert conv.shape == (3, 256) and rec.shape == (2, 64, 32)
    assert conv.nbytes + rec.nbytes == (768 + 4096) * 2
