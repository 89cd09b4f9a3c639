"""moe_c architectures: Step3p5, Param2MoE, AliceAI (vllm/model_executor/models/step3p5.py,
param2moe.py, alice_ai.py, 0.33.0), Sarvam-MoE and HYV3 (declared in
registry/architectures/moe_c.yaml): worked examples by hand."""

from __future__ import annotations

import pytest

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext
from vmemplan.core.kv_specs import FullAttentionSpec, SlidingWindowSpec
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

STEP = {
    "architectures": ["Step3p5ForCausalLM"], "model_type": "step3p5", "dtype": "bfloat16",
    "vocab_size": 1000, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_sliding_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 16,
    "max_position_embeddings": 512, "sliding_window": 32, "tie_word_embeddings": False,
    "layer_types": ["full_attention", "sliding_attention", "sliding_attention", "full_attention"],
    "mlp_layer_types": ["dense", "sparse", "sparse", "sparse"],
    "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "share_expert_dim": 48,
    "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 5e6, "partial_rotary_factor": 0.5},
                        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}},
}


def _by_name(adapter, ctx=None):
    out: dict[str, list] = {}
    for t in adapter.weight_tensors(ctx or GraphContext()):
        out.setdefault(t.name, []).append(t)
    return out


def test_step3p5_tensors_by_hand() -> None:
    ts = _by_name(adapter_for(ModelConfig.from_dict(STEP)))
    # qkv: (4 + 2·2)·16 = 128 rows on the two full layers, (8 + 2·2)·16 = 192 on the two sliding ones
    assert sorted((t.rows, t.count) for t in ts["self_attn.qkv_proj"]) == [(128, 2), (192, 2)]
    # dense layer 0: one merged gate_up_proj [2·128, 64]
    assert [(t.rows, t.cols, t.count) for t in ts["mlp.gate_up_proj"]] == [(256, 64, 1)]
    assert "mlp.gate_proj" not in ts and "mlp.up_proj" not in ts
    # three MoE layers: fp32 router [4, 64], fp32 router bias [4], merged share_expert [2·48, 64]
    gate = ts["mlp.gate"][0]
    assert (gate.rows, gate.cols, gate.count, gate.dtype) == (4, 64, 3, "float32")
    assert ts["mlp.gate.e_score_correction_bias"][0].dtype == "float32"
    assert (ts["mlp.shared_expert.gate_up_proj"][0].rows, ts["mlp.shared_expert.gate_up_proj"][0].count) == (96, 3)
    # two rotary tables: full layers rotate half of 16, sliding layers all 16, over 512 positions
    assert sorted((t.rows, t.cols) for t in ts["rotary_emb.cos_sin_cache"]) == [(512, 8), (512, 16)]
    # an LM head of its own
    assert ts["lm_head"][0].rows == 1024  # 1000 padded to 64


def test_step3p5_window_only_on_sliding_layers() -> None:
    specs = adapter_for(ModelConfig.from_dict(STEP)).kv_cache_specs(GraphContext(tensor_parallel_size=2))
    assert type(specs["model.layers.0.self_attn.attn"]) is FullAttentionSpec
    sw = specs["model.layers.2.self_attn.attn"]
    assert type(sw) is SlidingWindowSpec and sw.sliding_window == 32 and sw.num_kv_heads == 1


def test_step3p5_remote_code_keys() -> None:
    """moe_layers_enum, attention_other_setting and per-layer rope lists (the hub config)."""
    cfg = {k: v for k, v in STEP.items() if k not in ("mlp_layer_types", "num_sliding_attention_heads",
                                                      "rope_parameters", "n_routed_experts")}
    cfg.update(moe_layers_enum="2,3", moe_num_experts=4, rope_theta=[5e6, 1e4, 1e4, 5e6],
               partial_rotary_factors=[0.5, 1.0, 1.0, 0.5],
               attention_other_setting={"attention_type": "sliding_attention", "num_attention_heads": 8})
    ts = _by_name(adapter_for(ModelConfig.from_dict(cfg)))
    assert ts["mlp.gate_up_proj"][0].count == 2 and ts["mlp.gate"][0].count == 2
    assert sorted((t.rows, t.count) for t in ts["self_attn.qkv_proj"]) == [(128, 2), (192, 2)]
    assert sorted((t.rows, t.cols) for t in ts["rotary_emb.cos_sin_cache"]) == [(512, 8), (512, 16)]


PARAM2 = {
    "architectures": ["Param2MoEForCausalLM"], "model_type": "param2moe", "torch_dtype": "bfloat16",
    "vocab_size": 1000, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 3,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "max_position_embeddings": 256,
    "rope_theta": 1e4, "rope_scaling": None, "use_qkv_bias": False, "use_bias": False, "use_qk_norm": True,
    "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "num_shared_experts": 2,
    "first_k_dense_replace": 1, "tie_word_embeddings": False,
}


def test_param2moe_by_hand() -> None:
    ts = _by_name(adapter_for(ModelConfig.from_dict(PARAM2)))
    # fp32 router and correction bias (on by default) on the two MoE layers
    assert (ts["mlp.gate"][0].rows, ts["mlp.gate"][0].count, ts["mlp.gate"][0].dtype) == (8, 2, "float32")
    assert ts["mlp.gate.e_score_correction_bias"][0].dtype == "float32"
    # two shared experts of 32 without the total key: one MLP of 64
    assert ts["mlp.shared_expert.gate_up_proj"][0].rows == 128
    # RMSNorm q/k norms: weights only, no LayerNorm bias
    assert not any(name.endswith(".bias") for name in ts)
    # with the total key it is taken as is, not multiplied
    ts = _by_name(adapter_for(ModelConfig.from_dict({**PARAM2, "moe_shared_expert_intermediate_size": 48})))
    assert ts["mlp.shared_expert.gate_up_proj"][0].rows == 96


def test_param2moe_never_replicates_kv_heads() -> None:
    a = adapter_for(ModelConfig.from_dict(PARAM2))
    with pytest.raises(UsageError):
        a.validate_parallel(GraphContext(tensor_parallel_size=4))


ALICE = {
    "architectures": ["AliceAIForCausalLM"], "model_type": "alice_ai", "dtype": "bfloat16",
    "vocab_size": 1000, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "max_position_embeddings": 256,
    "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
    "linear_num_key_heads": 4, "linear_num_value_heads": 4, "linear_key_head_dim": 8,
    "linear_value_head_dim": 8, "linear_conv_kernel_dim": 4, "num_experts": 8, "num_experts_per_tok": 2,
    "moe_intermediate_size": 32, "shared_expert_intermediate_size": 32, "block_attn_res_block_size": 2,
    "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "partial_rotary_factor": 0.25},
    "tie_word_embeddings": False,
}


def test_alice_ai_by_hand() -> None:
    ts = _by_name(adapter_for(ModelConfig.from_dict(ALICE)))
    # KDA in_proj: q, k, v of 4·8 = 32 each, beta 4, f_a 8 -> 108 rows, on three layers
    kda = ts["linear_attn.in_proj_qkvgfab"][0]
    assert (kda.rows, kda.cols, kda.count) == (108, 64, 3)
    assert "linear_attn.in_proj_qkvz" not in ts
    # gated full attention on one layer: (2·4 + 2·2)·16 = 192 rows
    assert ts["self_attn.qkv_proj"][0].rows == 192 and ts["self_attn.qkv_proj"][0].count == 1
    # attention-residual mixers: attn_res on layers 1..3, mlp_res on all four, one final mixer
    assert ts["attn_res_proj"][0].count == 3 and ts["mlp_res_proj"][0].count == 4
    assert ts["model.attnres_final.res_proj"][0].count == 1
    assert ts["mlp.gate.e_score_correction_bias"][0].dtype == "float32"


def test_alice_ai_kda_state() -> None:
    a = adapter_for(ModelConfig.from_dict(ALICE))
    conv, rec = a.mamba_state(GraphContext(tensor_parallel_size=2, model_dtype="bfloat16"))
    # conv (4 - 1) x 3·32/2, recurrent 4/2 heads x 8 x 8 in fp32
    assert conv.shape == (3, 48) and rec.shape == (2, 8, 8) and rec.dtype == "float32"
    with pytest.raises(UsageError):
        a.validate_parallel(GraphContext(pipeline_parallel_size=2))


def test_declared_sarvam_and_hyv3() -> None:
    sarvam = adapter_for(ModelConfig.from_dict({
        "architectures": ["SarvamMoEForCausalLM"], "vocab_size": 1000, "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 16, "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
        "num_shared_experts": 1, "first_k_dense_replace": 1, "use_qk_norm": True,
        "moe_router_enable_expert_bias": True, "max_position_embeddings": 256}))
    assert type(sarvam).__mro__[1].__name__ == "BailingMoe"
    hy = _by_name(adapter_for(ModelConfig.from_dict({
        "architectures": ["HYV3ForCausalLM"], "model_type": "hy_v3", "vocab_size": 1000, "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 16, "num_experts": 8, "num_experts_per_tok": 2, "expert_hidden_dim": 24,
        "moe_intermediate_size": 1536, "num_shared_experts": 2, "first_k_dense_replace": 1, "qk_norm": True,
        "max_position_embeddings": 256})))
    # experts of expert_hidden_dim (24, not moe_intermediate_size), shared MLP of 2·24, fp32 router
    assert hy["mlp.experts.w13_weight"][0].rows == 48
    assert hy["mlp.shared_expert.gate_up_proj"][0].rows == 96
    assert hy["mlp.gate"][0].dtype == "float32" and "self_attn.q_norm" in " ".join(hy)


def test_hyv3_embedding_and_head_on_every_stage() -> None:
    """HYV3Model builds embed_tokens and norm, HYV3ForCausalLM its lm_head, on every stage."""
    cfg = {"architectures": ["HYV3ForCausalLM"], "model_type": "hy_v3", "vocab_size": 1000, "hidden_size": 64,
           "intermediate_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
           "head_dim": 16, "num_experts": 8, "num_experts_per_tok": 2, "expert_hidden_dim": 24,
           "num_shared_experts": 1, "first_k_dense_replace": 1, "max_position_embeddings": 256,
           "tie_word_embeddings": False}
    a = adapter_for(ModelConfig.from_dict(cfg))
    for rank in range(2):
        names = [t.name for t in a.weight_tensors(GraphContext(pipeline_parallel_size=2, pipeline_rank=rank))]
        assert names.count("model.embed_tokens") == 1 and names.count("lm_head") == 1
        assert names.count("model.norm") == 1
    tied = adapter_for(ModelConfig.from_dict({**cfg, "tie_word_embeddings": True}))
    names = [t.name for t in tied.weight_tensors(GraphContext(pipeline_parallel_size=2, pipeline_rank=1))]
    assert "lm_head" not in names and "model.embed_tokens" in names
