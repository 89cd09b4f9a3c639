"""mixed_c families (vLLM 0.33.0): worked examples computed by hand."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.core.kv_specs import FullAttentionSpec, SlidingWindowSpec
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

#: a small MiMo-V2-Flash (vllm/model_executor/models/mimo_v2.py): layers 1 and 2 windowed
MIMO = {
    "architectures": ["MiMoV2FlashForCausalLM"], "model_type": "mimo_v2_flash", "torch_dtype": "bfloat16",
    "vocab_size": 1000, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 4,
    "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 48, "v_head_dim": 32,
    "swa_num_attention_heads": 8, "swa_num_key_value_heads": 4, "swa_head_dim": 48, "swa_v_head_dim": 32,
    "hybrid_layer_pattern": [0, 1, 1, 0], "moe_layer_freq": [0, 1, 1, 1], "sliding_window_size": 128,
    "rope_theta": 5e6, "swa_rope_theta": 1e4, "partial_rotary_factor": 0.334, "max_position_embeddings": 1024,
    "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 64, "n_group": 1, "topk_group": 1,
    "add_swa_attention_sink_bias": True, "attention_bias": False, "layernorm_epsilon": 1e-5,
    "hidden_act": "silu", "tie_word_embeddings": False,
}


def _names(cfg: dict, ctx: GraphContext) -> dict:
    return {t.name: t for t in adapter_for(ModelConfig.from_dict(cfg)).weight_tensors(ctx)}


def test_mimo_v2_by_hand() -> None:
    ts = _names(MIMO, GraphContext(tensor_parallel_size=2))
    # full layers: q 4·48 + k 1·48 + v 1·32 = 272 rows; o_proj over 4·32 = 128 inputs
    assert ts["self_attn.qkv_proj[full]"].rows == 272 and ts["self_attn.qkv_proj[full]"].count == 2
    assert ts["self_attn.o_proj[full]"].cols == 128
    # window layers: q 4·48 + k 2·48 + v 2·32 = 352 rows; sinks of 4 heads a rank
    assert ts["self_attn.qkv_proj[swa]"].rows == 352
    assert ts["self_attn.attention_sink_bias[swa]"].rows == 4 and "self_attn.attention_sink_bias[full]" not in ts
    # two rotary caches (theta differs): 1024 rows x int(48 · 0.334) = 16 columns each
    rot = [t for n, t in ts.items() if "rotary" in n]
    assert [(t.rows, t.cols) for t in rot] == [(1024, 16), (1024, 16)]
    # one dense layer, three MoE layers with an fp32 router and correction bias, no shared experts
    assert ts["mlp.gate_up_proj"].count == 1 and ts["mlp.gate"].count == 3 and ts["mlp.gate"].dtype == "float32"
    assert ts["mlp.gate.e_score_correction_bias"].count == 3
    assert not any("shared" in n for n in ts)
    specs = adapter_for(ModelConfig.from_dict(MIMO)).kv_cache_specs(GraphContext(tensor_parallel_size=2))
    full, swa = specs["model.layers.0.self_attn.attn"], specs["model.layers.1.self_attn.attn"]
    assert type(full) is FullAttentionSpec and isinstance(swa, SlidingWindowSpec) and swa.sliding_window == 128
    # page = 16 tokens · KV heads · (48 + 32) · 2 B: 1 head on full layers, 2 on window layers
    assert full.page_size_bytes == 16 * 1 * 80 * 2 and swa.page_size_bytes == 16 * 2 * 80 * 2
    # same theta on both kinds: one shared cache
    assert sum("rotary" in n for n in _names({**MIMO, "swa_rope_theta": 5e6}, GraphContext())) == 1


#: a small PLaMo-3 (vllm/model_executor/models/plamo3.py); Plamo3Config derives the windows
PLAMO3 = {
    "architectures": ["Plamo3ForCausalLM"], "model_type": "plamo3", "torch_dtype": "bfloat16",
    "vocab_size": 1000, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "max_position_embeddings": 4096,
    "window_size": 256, "sliding_window_pattern": 2, "rope_theta": 1e6, "rope_local_theta": 1e4,
}


def test_plamo3_by_hand() -> None:
    ctx = GraphContext(tensor_parallel_size=2, max_model_len=1024)
    ts = _names(PLAMO3, ctx)
    # qkv (2 + 2·1)·64 = 256 rows a rank; 4 sandwich norms and q/k norms of 64 per layer
    assert ts["mixer.qkv_proj"].rows == 256
    assert ts["pre/post_mixer_norm+pre/post_mlp_norm"].count == 16 and ts["mixer.q_norm+k_norm"].count == 8
    # two rotary caches (theta 1e6 global, 1e4 local), rows capped by the context: min(4096, 1024)
    rot = [t for n, t in ts.items() if "rotary" in n]
    assert [(t.rows, t.cols) for t in rot] == [(1024, 64), (1024, 64)]
    # tied head by default: no separate lm_head tensor; ceil(1000 / 16)·16 = 1008 -> 1024 rows / 2
    assert "lm_head" not in ts and ts["model.embed_tokens"].rows == 512
    # (i + 1) % 2 == 0 is global: layers 1 and 3 full, 0 and 2 windowed by 256
    specs = adapter_for(ModelConfig.from_dict(PLAMO3)).kv_cache_specs(ctx)
    assert isinstance(specs["model.layers.layers.0.mixer.attn"], SlidingWindowSpec)
    assert specs["model.layers.layers.0.mixer.attn"].sliding_window == 256
    assert type(specs["model.layers.layers.1.mixer.attn"]) is FullAttentionSpec


#: a small RNJ-1 (vllm/model_executor/models/rnj1.py): Gemma3TextConfig with chunked layers
RNJ1 = {
    "architectures": ["Rnj1ForCausalLM"], "model_type": "gemma3_text", "torch_dtype": "bfloat16",
    "vocab_size": 1000, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 3,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "max_position_embeddings": 2048,
    "sliding_window": 512, "layer_types": ["chunked_attention", "chunked_attention", "full_attention"],
    "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                        "chunked_attention": {"rope_type": "default", "rope_theta": 1e4}},
    "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 64,
}


def test_rnj1_by_hand() -> None:
    ts = _names(RNJ1, GraphContext(tensor_parallel_size=2))
    # two rotary caches (one a layer type): 2048 x 64 each; Gemma's normalizer; four fp32 scales a layer
    assert [(t.rows, t.cols) for n, t in ts.items() if "rotary" in n] == [(2048, 64), (2048, 64)]
    assert "model.normalizer" in ts and ts["self_attn.attn.k/v/q/prob_scale"].count == 12
    assert ts["4 GemmaRMSNorms"].count == 12 and ts["self_attn.q_norm+k_norm"].count == 6
    assert "lm_head" not in ts  # tied by default
    specs = adapter_for(ModelConfig.from_dict(RNJ1)).kv_cache_specs(GraphContext(tensor_parallel_size=2))
    # chunked layers: a 512-token window, 1 KV head a rank; the full layer has none
    assert specs["model.layers.0.self_attn.attn"].sliding_window == 512
    assert specs["model.layers.0.self_attn.attn"].page_size_bytes == 16 * 1 * 2 * 64 * 2
    assert type(specs["model.layers.2.self_attn.attn"]) is FullAttentionSpec


#: a small DomynEdge (vllm/model_executor/models/domyn_edge.py): NoPE full layers of head 128,
#: RoPE window layers of head 32
DOMYN = {
    "architectures": ["DomynEdgeForCausalLM"], "model_type": "domynedge", "torch_dtype": "bfloat16",
    "vocab_size": 1000, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 2048,
    "position_layers": ["nope", "rope", "rope", "nope"], "window_sizes": [[-1, 0], [255, 0], [255, 0], [-1, 0]],
    "head_sizes": [128, 32, 32, 128], "per_layer_config": [{"head_dim": h} for h in (128, 32, 32, 128)],
    "head_dim": 128, "rope_parameters": {"rope_type": "default", "rope_theta": 1e4}, "hidden_act": "silu",
    "tie_word_embeddings": True,
}


def test_domyn_edge_by_hand() -> None:
    ts = _names(DOMYN, GraphContext(tensor_parallel_size=2))
    # head 128 layers: qkv (2 + 2·1)·128 = 512 rows, o_proj over 2·128; head 32: (2 + 2)·32 = 128 rows
    assert ts["attention[hd=128].qkv_proj"].rows == 512 and ts["attention[hd=128].o_proj"].cols == 256
    assert ts["attention[hd=32].qkv_proj"].rows == 128 and ts["attention[hd=32].qkv_proj"].count == 2
    # one fp32 rotary cache 2048 x 32 for the RoPE layers
    # k_norm a weight; q_norm weightless, yet its torch.ones(head_dim) sits on the device
    assert ts["attention[hd=32].k_norm"].rows == 32
    assert ts["attention[hd=32].q_norm.weight(ones, not a parameter)"].rows == 32
    rot = [t for n, t in ts.items() if "rotary" in n]
    assert [(t.rows, t.cols, t.dtype) for t in rot] == [(2048, 32, "float32")]
    assert "lm_head" not in ts  # tied: the head is the embedding
    specs = adapter_for(ModelConfig.from_dict(DOMYN)).kv_cache_specs(GraphContext(tensor_parallel_size=2))
    # HF window (255, 0) -> vLLM window 256; pages follow each layer's head size
    win, full = specs["model.layers.1.attention.attn"], specs["model.layers.0.attention.attn"]
    assert isinstance(win, SlidingWindowSpec) and win.sliding_window == 256
    assert type(full) is FullAttentionSpec
    assert full.page_size_bytes == 16 * 1 * 2 * 128 * 2 and win.page_size_bytes == 16 * 1 * 2 * 32 * 2


def test_mimo_v2_fused_qkv_layout_by_hand() -> None:
    """MiMoV2ForCausalLM's ``fused_qkv`` layout of a block-fp8 checkpoint (mimo_v2.py::
    _fused_qkv_kv_chunk_rows): 4 checkpoint chunks (num_key_value_heads) > TP 1; a full layer's
    chunk holds 1 K head of 192 and 1 V head of 128 rows = 320, padded to 384, so the
    projection is 64·192 + 4·384 = 13,824 rows; a window layer's K (2·192) and V (2·128) rows
    are whole blocks, so it keeps the plain 64·192 + 8·(192 + 128) = 14,848."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "fixtures/oracle/configs/XiaomiMiMo--MiMo-V2-fused-qkv-8L.synthetic.json"
    ts = _names(json.loads(path.read_text()), GraphContext())
    assert ts["self_attn.qkv_proj[full].q+kv_chunks"].rows == 13824
    assert ts["self_attn.qkv_proj[swa]"].rows == 14848
