"""Laguna (vllm/model_executor/models/laguna.py, 0.33.0): worked examples by hand."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.core.kv_specs import FullAttentionSpec, SlidingWindowSpec
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

TINY = {
    "architectures": ["LagunaForCausalLM"], "model_type": "laguna", "torch_dtype": "bfloat16",
    "vocab_size": 1000, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "max_position_embeddings": 1024,
    "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 128,
    "shared_expert_intermediate_size": 128, "gating": True, "sliding_window": 128,
    "tie_word_embeddings": False, "rms_norm_eps": 1e-6,
    "layer_types": ["full_attention", "sliding_attention", "sliding_attention", "sliding_attention"],
    "mlp_layer_types": ["dense", "sparse", "sparse", "sparse"],
    "num_attention_heads_per_layer": [4, 8, 8, 8],
    "partial_rotary_factor": 0.5,
    "rope_parameters": {
        "full_attention": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 256,
                           "rope_theta": 5e5, "partial_rotary_factor": 0.5},
        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 1.0},
    },
}


def _adapter(**changes):
    return adapter_for(ModelConfig.from_dict({**TINY, **changes}))


def test_tensors_by_hand() -> None:
    a = _adapter()
    ts = {}
    for t in a.weight_tensors(GraphContext()):
        ts.setdefault(t.name, []).append(t)
    # qkv: (4 + 2·2)·64 = 512 rows for the 4-head layer, (8 + 4)·64 = 768 for the three 8-head ones
    assert sorted((t.rows, t.count) for t in ts["self_attn.qkv_proj"]) == [(512, 1), (768, 3)]
    # per-head output gate: one row per head
    assert sorted((t.rows, t.cols, t.count) for t in ts["self_attn.g_proj"]) == [(4, 256, 1), (8, 256, 3)]
    # dense layer 0: separate gate_proj / up_proj [512, 256]
    assert (ts["mlp.gate_proj"][0].rows, ts["mlp.up_proj"][0].rows) == (512, 512)
    # shared expert split too; fp32 correction bias [8] per MoE layer
    assert ts["mlp.shared_expert.gate_proj"][0].rows == 128 and ts["mlp.shared_expert.gate_proj"][0].count == 3
    assert ts["mlp.gate.e_score_correction_bias"][0].dtype == "float32"
    # two rotary tables: yarn 256·4 = 1024 positions × 32 (half of 64), default 1024 × 64
    assert sorted((t.rows, t.cols) for t in ts["rotary_emb.cos_sin_cache"]) == [(1024, 32), (1024, 64)]


def test_window_only_on_sliding_layers() -> None:
    specs = _adapter().kv_cache_specs(GraphContext(tensor_parallel_size=2))
    assert type(specs["model.layers.0.self_attn.attn"]) is FullAttentionSpec
    sw = specs["model.layers.1.self_attn.attn"]
    assert type(sw) is SlidingWindowSpec and sw.sliding_window == 128 and sw.num_kv_heads == 1


def test_compressed_tensors_kv_scheme_means_fp8() -> None:
    qc = {"quant_method": "compressed-tensors", "config_groups": {}, "kv_cache_scheme": {"strategy": "tensor"}}
    a = _adapter(quantization_config=qc)
    assert a.resolve_cache_dtype(GraphContext(), "auto") == "fp8"
    assert a.resolve_cache_dtype(GraphContext(), "bfloat16") == "bfloat16"
    # the k/v/q scale placeholders and zero points are deleted after loading; per-tensor scales
    # become the four fp32 scalars already counted (CompressedTensorsKVCacheMethod.
    # process_weights_after_loading), so nothing more per attention layer
    names = {t.name for t in a.weight_tensors(GraphContext())}
    assert not any("zero_point" in n or "per head" in n for n in names)
    # attn_head: _k/_v/_q_scale hold one fp32 per local KV head, 3 x 4 x (heads - 1) B more a layer
    qc["kv_cache_scheme"] = {"strategy": "attn_head"}
    extra = [t for t in _adapter(quantization_config=qc).weight_tensors(GraphContext()) if "per head" in t.name]
    assert [(t.count, t.dtype) for t in extra] == [(12, "float32")]
