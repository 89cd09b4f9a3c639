"""Worked examples for models/bailing_linear.py (BailingMoeV2_5ForCausalLM), figures computed by
hand from vLLM 0.33.0's bailing_moe_linear.py / bailing_linear_attn.py shape rules."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.model_config import ModelConfig
from vmemplan.models.bailing_linear import BailingMoeV25


def _cfg(**over) -> BailingMoeV25:
    d = {
        "architectures": ["BailingMoeV2_5ForCausalLM"], "model_type": "bailing_moe_v2_5",
        "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 6, "num_attention_heads": 8,
        "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 1000, "max_position_embeddings": 4096,
        "num_experts": 16, "num_experts_per_tok": 2, "num_shared_experts": 1, "moe_intermediate_size": 64,
        "first_k_dense_replace": 1, "layer_group_size": 3, "group_norm_size": 4, "use_qk_norm": True,
        "moe_router_enable_expert_bias": True, "router_dtype": "fp32", "kv_lora_rank": 128,
        "q_lora_rank": None, "qk_rope_head_dim": 16, "qk_nope_head_dim": 32, "v_head_dim": 32,
        "partial_rotary_factor": 0.5, "torch_dtype": "bfloat16",
    }
    d.update(over)
    return BailingMoeV25(ModelConfig.from_dict(d))


def _by_name(tensors):
    return {t.name: t for t in tensors}


def test_every_third_layer_is_mla_and_the_others_linear() -> None:
    # is_linear_layer: (i + 1) % 3 != 0 -> layers 2 and 5 are MLA
    assert _cfg().layer_kinds() == ("mamba", "mamba", "mla", "mamba", "mamba", "mla")


def test_linear_state_is_heads_by_head_dim_squared() -> None:
    a = _cfg()
    ctx = GraphContext(model_dtype="bfloat16", tensor_parallel_size=2, max_model_len=4096, block_size=16)
    (state,) = a.mamba_state(ctx)
    # (8 heads / tp 2, 32, 32) in bf16: 4 * 32 * 32 * 2 = 8192 B
    assert state.shape == (4, 32, 32) and state.nbytes == 8192
    specs = a.kv_cache_specs(ctx)
    assert "model.layers.0.self_attn" in specs and "model.layers.2.self_attn.attn" in specs
    # MLA latent: kv_lora_rank 128 + rope 16
    assert specs["model.layers.2.self_attn.attn"].head_size == 144


def test_bailing_hybrid_model_type_reads_head_dim_as_the_rope_width() -> None:
    # transformers' BailingHybridConfig sets head_dim = qk_rope_head_dim (16)
    a = _cfg(model_type="bailing_hybrid")
    (state,) = a.mamba_state(GraphContext(model_dtype="bfloat16", tensor_parallel_size=1))
    assert state.shape == (8, 16, 16)


def test_linear_and_mla_tensors_per_rank() -> None:
    w = _by_name(_cfg().weight_tensors(GraphContext(model_dtype="bfloat16", tensor_parallel_size=2)))
    # MHA qkv: 3 x 8 x 32 / 2 = 384 rows over hidden 256, four linear layers
    qkv = w["self_attn.query_key_value"]
    assert (qkv.rows, qkv.cols, qkv.count) == (384, 256, 4)
    assert w["self_attn.g_norm"].rows == 128
    # slopes: all 8 heads in fp32 per linear layer (tp_slope is a view)
    slope = w["self_attn.slope_rate"]
    assert (slope.rows, slope.count, slope.dtype) == (8, 4, "float32")
    # MLA q_proj: 8 x (32 + 16) / 2 = 192; kv_a replicated 128 + 16 = 144
    assert w["self_attn.q_proj"].rows == 192 and w["self_attn.kv_a_proj_with_mqa"].rows == 144
    assert w["self_attn.kv_b_proj"].rows == 8 * 64 // 2
    # five MoE layers: fp32 router and expert bias; one dense layer
    assert w["mlp.gate"].dtype == "float32" and w["mlp.gate"].count == 5
    assert w["mlp.gate_up_proj"].count == 1
    # two rotary caches: neox 32 x 0.5 = 16 wide, MLA 16 wide, 4096 positions each
    assert w["linear.rotary_emb.cos_sin_cache"].cols == 16 and w["mla.rotary_emb.cos_sin_cache"].cols == 16
    # lm_head is never tied
    assert "lm_head" in w


def _v3(**over):
    from vmemplan.models.bailing_linear import BailingMoeV3

    d = {
        "architectures": ["BailingMoeV3ForCausalLM"], "model_type": "bailing_moe_v3", "hidden_size": 256,
        "intermediate_size": 512, "num_hidden_layers": 6, "num_attention_heads": 8, "head_dim": 32,
        "vocab_size": 1000, "max_position_embeddings": 4096, "num_experts": 16, "num_experts_per_tok": 2,
        "num_shared_experts": 1, "moe_intermediate_size": 64, "moe_shared_expert_intermediate_size": 64,
        "first_k_dense_replace": 1, "layer_group_size": 4, "short_conv_kernel_size": 4, "no_kda_lora": True,
        "kv_lora_rank": 128, "q_lora_rank": 64, "qk_rope_head_dim": 16, "qk_nope_head_dim": 32,
        "v_head_dim": 32, "gated_attention_proj_granularity_type": "head_wise", "use_bias": False,
        "torch_dtype": "bfloat16",
    }
    d.update(over)
    return BailingMoeV3(ModelConfig.from_dict(d))


def test_v3_trailing_partial_group_is_mla() -> None:
    # _is_kda_layer: MLA at (i + 1) % 4 == 0 and at i >= 6 // 4 * 4 = 4
    assert _v3().layer_kinds() == ("mamba", "mamba", "mamba", "mla", "mla", "mla")


def test_v3_kda_and_gated_mla_tensors_per_rank() -> None:
    a = _v3()
    ctx = GraphContext(model_dtype="bfloat16", tensor_parallel_size=2, max_model_len=4096, block_size=16)
    w = _by_name(a.weight_tensors(ctx))
    # qkvb: (3 x 8 x 32 + 8) / 2 = 388 rows; three fp32 convolutions [128, 4] per KDA layer
    assert (w["self_attn.qkvb_proj"].rows, w["self_attn.qkvb_proj"].count) == (388, 3)
    conv = w["self_attn.q/k/v_conv1d"]
    assert (conv.rows, conv.cols, conv.count, conv.dtype) == (128, 4, 9, "float32")
    assert w["self_attn.o_proj"].count == 3 and w["self_attn.dense"].count == 3
    # head-wise MLA gate: 8 heads / 2; fused_qkv_a replicated: 64 + 128 + 16
    assert w["self_attn.mla_g_proj"].rows == 4 and w["self_attn.fused_qkv_a_proj"].rows == 208
    # KDA state: conv (4 - 1, 3 x 256 / 2) bf16 + recurrent (4, 32, 32) fp32
    conv_s, rec_s = a.mamba_state(ctx)
    assert conv_s.shape == (3, 384) and rec_s.shape == (4, 32, 32) and rec_s.dtype == "float32"
