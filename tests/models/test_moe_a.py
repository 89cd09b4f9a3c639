"""OLMoE, Granite-MoE-Shared/SWA, Bailing, ERNIE-4.5-MoE, EXAONE-MoE and DBRX: the tensors
their vLLM 0.33.0 model files build, on tiny configs worked by hand."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.model_config import ModelConfig
from vmemplan.models import adapter_for

_BASE = {"hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
         "intermediate_size": 32, "vocab_size": 128, "max_position_embeddings": 256, "torch_dtype": "bfloat16"}


def _tensors(cfg: dict, tp: int = 1) -> dict[str, tuple[int, int, int]]:
    a = adapter_for(ModelConfig.from_dict({**_BASE, **cfg}))
    return {t.name: (t.rows, t.cols, t.count) for t in a.weight_tensors(GraphContext(tensor_parallel_size=tp))}


def test_olmoe_qk_norms_cover_every_head_on_every_rank() -> None:
    # olmoe.py::OlmoeAttention: RMSNorm(total_num_heads·head_dim) and RMSNorm(total_kv·head_dim),
    # head_dim 64 / 4 = 16: q_norm 64 and k_norm 32 wide at TP 2 as at TP 1; the head is untied.
    cfg = {"architectures": ["OlmoeForCausalLM"], "model_type": "olmoe", "num_experts": 8,
           "num_experts_per_tok": 2, "tie_word_embeddings": True}
    for tp in (1, 2):
        t = _tensors(cfg, tp)
        assert t["self_attn.q_norm"] == (64, 1, 4)
        assert t["self_attn.k_norm"] == (32, 1, 4)
        assert t["lm_head"] == (128 // tp, 64, 1)
        assert t["mlp.experts.w13_weight"] == (2 * 32 // tp, 64, 8 * 4)


def test_granitemoe_shared_mlp_sinks_and_rope_caches() -> None:
    # granitemoeshared.py: shared_mlp input_linear [2·48, 64] and output_linear [64, 48], split
    # over TP 2; layer_types present, so a sinks [heads / tp] parameter per layer; bases
    # 10000 / 0 / 10000 / 500 → two distinct non-zero bases, two cos/sin caches [256, 16].
    cfg = {"architectures": ["GraniteMoeSWAForCausalLM"], "model_type": "granitemoe_swa",
           "num_local_experts": 4, "num_experts_per_tok": 2, "shared_intermediate_size": 48,
           "sliding_window": 32, "layer_types": ["full_attention", "sliding_attention"] * 2,
           "layer_rope_theta": [10000.0, 0, 10000.0, 500.0]}
    t = _tensors(cfg, 2)
    assert t["shared_mlp.input_linear"] == (48, 64, 4)
    assert t["shared_mlp.output_linear"] == (64, 24, 4)
    assert t["self_attn.sinks"] == (2, 1, 4)
    assert t["rotary_emb.cos_sin_cache"] == (256, 16, 2)
    a = adapter_for(ModelConfig.from_dict({**_BASE, **cfg}))
    assert [a.sliding_window_for_layer(i) for i in range(4)] == [None, 32, None, 32]


def test_bailing_layernorm_qk_norms_shared_experts_and_fp32_router() -> None:
    # bailing_moe.py: use_qk_norm without use_rmsnorm → nn.LayerNorm(head_dim) for q and k (a
    # weight and a bias each); one dense layer (first_k_dense_replace 1) of intermediate_size;
    # shared experts of moe_shared_expert_intermediate_size 8 × 2; router_dtype fp32 and an
    # fp32 expert bias; partial_rotary_factor 0.5 → rotary width 8 of head_dim 16.
    cfg = {"architectures": ["BailingMoeV2ForCausalLM"], "model_type": "bailing_moe", "num_experts": 8,
           "num_experts_per_tok": 2, "moe_intermediate_size": 16, "num_shared_experts": 2,
           "moe_shared_expert_intermediate_size": 8, "first_k_dense_replace": 1, "use_qk_norm": True,
           "partial_rotary_factor": 0.5, "router_dtype": "fp32", "moe_router_enable_expert_bias": True}
    a = adapter_for(ModelConfig.from_dict({**_BASE, **cfg}))
    ts = {t.name: t for t in a.weight_tensors(GraphContext())}
    assert (ts["attention.query_layernorm+key_layernorm"].rows, ts["attention.query_layernorm+key_layernorm"].count) == (16, 8)
    assert "attention.query_layernorm+key_layernorm.bias" in ts
    assert (ts["mlp.gate_up_proj"].rows, ts["mlp.gate_up_proj"].count) == (64, 1)
    assert (ts["mlp.shared_expert.gate_up_proj"].rows, ts["mlp.shared_expert.gate_up_proj"].count) == (32, 3)
    assert ts["mlp.gate"].dtype == "float32"
    assert ts["mlp.gate.e_score_correction_bias"].dtype == "float32"
    assert ts["rotary_emb.cos_sin_cache"].cols == 8


def test_ernie45_moe_sparse_layers_between_start_and_end() -> None:
    # ernie45_moe.py: sparse when (i + 1) % 1 == 0 and 1 <= i <= 2 → layers 1 and 2 of 4.
    cfg = {"architectures": ["Ernie4_5_MoeForCausalLM"], "model_type": "ernie4_5_moe", "moe_num_experts": 4,
           "moe_k": 2, "moe_intermediate_size": 8, "moe_num_shared_experts": 1, "moe_layer_start_index": 1,
           "moe_layer_end_index": 2}
    t = _tensors(cfg)
    assert t["mlp.gate_up_proj"] == (64, 64, 2)
    assert t["mlp.experts.w13_weight"] == (16, 64, 4 * 2)
    assert t["mlp.shared_expert.gate_up_proj"] == (16, 64, 2)


def test_exaone_moe_mlp_layer_types_and_windows() -> None:
    cfg = {"architectures": ["ExaoneMoEForCausalLM"], "model_type": "exaone_moe", "num_experts": 4,
           "num_experts_per_tok": 2, "moe_intermediate_size": 8, "num_shared_experts": 1,
           "mlp_layer_types": ["dense", "sparse", "sparse", "dense"], "sliding_window": 32,
           "layer_types": ["sliding_attention", "full_attention"] * 2}
    t = _tensors(cfg)
    assert t["mlp.gate_up_proj"][2] == 2 and t["mlp.experts.w13_weight"][2] == 4 * 2
    a = adapter_for(ModelConfig.from_dict({**_BASE, **cfg}))
    assert [a.sliding_window_for_layer(i) for i in range(4)] == [32, None, 32, None]


def test_dbrx_nested_keys_are_read() -> None:
    # dbrx.py reads d_model / n_heads / n_layers / max_seq_len and the nested attn/ffn configs.
    raw = {"architectures": ["DbrxForCausalLM"], "model_type": "dbrx", "d_model": 64, "n_heads": 4, "n_layers": 3,
           "max_seq_len": 128, "vocab_size": 128, "torch_dtype": "bfloat16",
           "attn_config": {"kv_n_heads": 2, "rope_theta": 500000},
           "ffn_config": {"ffn_hidden_size": 32, "moe_num_experts": 4, "moe_top_k": 2}}
    a = adapter_for(ModelConfig.from_dict(raw))
    t = {x.name: (x.rows, x.cols, x.count) for x in a.weight_tensors(GraphContext())}
    assert a.config.num_hidden_layers == 3 and a.config.num_key_value_heads == 2
    assert t["self_attn.qkv_proj"] == (64 + 2 * 2 * 16, 64, 3)
    assert t["mlp.experts.w13_weight"] == (64, 64, 4 * 3)
    assert t["rotary_emb.cos_sin_cache"] == (128, 16, 1)
