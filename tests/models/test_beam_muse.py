"""Beam and MuseGlimmer (vLLM 0.33.0 models/beam, muse_glimmer.py): worked examples by hand."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.core.kv_specs import FullAttentionSpec, SlidingWindowSpec
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

BEAM = {
    "architectures": ["BeamForCausalLM"], "model_type": "beam", "torch_dtype": "bfloat16",
    "vocab_size": 1000, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 4,
    "num_attention_heads": 8, "num_key_value_heads": 2, "max_position_embeddings": 1024,
    "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 64, "sliding_window": 128,
    "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"],
    "mlp_layer_types": ["dense", "sparse", "sparse", "sparse"], "tie_word_embeddings": False,
    "rope_parameters": {"rope_type": "default", "rope_theta": 1e4},
}

MUSE = {
    "architectures": ["MuseGlimmerForCausalLM"], "model_type": "muse_glimmer_text", "torch_dtype": "bfloat16",
    "vocab_size": 1000, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "max_position_embeddings": 1024,
    "sliding_window": 128, "layer_rope_theta": [1e4, 1e4, 1e4, 0],
    "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"],
    "hidden_activation": "silu", "rope_parameters": {"rope_type": "default", "rope_theta": 1e4},
}


def _names(cfg: dict, ctx: GraphContext) -> dict:
    return {t.name: t for t in adapter_for(ModelConfig.from_dict(cfg)).weight_tensors(ctx)}


def test_beam_projection_split_by_hand() -> None:
    # TP 2 <= 2 KV heads: one merged [q, k, v, gate] = (2·8 + 2·2)·32 / 2 = 320 rows
    ts = _names(BEAM, GraphContext(tensor_parallel_size=2))
    assert ts["self_attn.qkv_gate_proj"].rows == 320 and "self_attn.qkv_proj" not in ts
    # TP 4 > 2 KV heads: qkv_proj (2 + 2·1)·32 = 128 rows and a separate gate of 2·32 = 64
    ts = _names(BEAM, GraphContext(tensor_parallel_size=4))
    assert ts["self_attn.qkv_proj"].rows == 128 and ts["self_attn.output_gate_proj"].rows == 64
    assert ts["self_attn.gate_bias"].rows == 2
    # one dense layer, three MoE ones with an fp32 router; an fp32 rotary cache
    assert ts["mlp.gate_up_proj"].count == 1 and ts["mlp.gate"].count == 3 and ts["mlp.gate"].dtype == "float32"
    assert ts["rotary_emb.cos_sin_cache"].dtype == "float32"
    specs = adapter_for(ModelConfig.from_dict(BEAM)).kv_cache_specs(GraphContext())
    assert isinstance(specs["model.layers.0.self_attn.attn"], SlidingWindowSpec)
    assert type(specs["model.layers.3.self_attn.attn"]) is FullAttentionSpec


def test_muse_glimmer_by_hand() -> None:
    ts = _names(MUSE, GraphContext(tensor_parallel_size=2))
    # output gate 2 heads · 64 = 128 rows a rank; no q/k norm weights; one rotary cache
    assert ts["self_attn.output_gate_proj"].rows == 128
    assert not any("norm" in n and "self_attn" in n for n in ts)
    assert sum("rotary" in n for n in ts) == 1
    assert ts["4 MuseGlimmerRMSNorms"].count == 16 and "lm_head" in ts
    no_rope = _names({**MUSE, "layer_rope_theta": [0, 0, 0, 0]}, GraphContext())
    assert not any("rotary" in n for n in no_rope)
