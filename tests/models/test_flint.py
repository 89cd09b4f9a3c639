"""Flint (vLLM 0.33.0 vllm/models/flint/model.py::FlintForCausalLM): a worked example by hand."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.core.kv_specs import FullAttentionSpec, SlidingWindowSpec
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

FLINT = {
    "architectures": ["FlintForCausalLM"], "model_type": "flint", "torch_dtype": "bfloat16",
    "vocab_size": 1000, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 3,
    "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 32, "max_position_embeddings": 1024,
    "sliding_window": 65, "layer_types": ["sliding_attention", "sliding_attention", "full_attention"],
    "no_rope_layer_indices": [2], "moe_intermediate_size": 64, "shared_expert_intermediate_size": 128,
    "num_experts": 4, "num_experts_per_tok": 2, "mlp_only_layers": [0],
}


def test_flint_tensors_and_specs_by_hand() -> None:
    a = adapter_for(ModelConfig.from_dict(FLINT))
    ctx = GraphContext(tensor_parallel_size=2)
    specs = a.kv_cache_specs(ctx)
    assert isinstance(specs["model.layers.0.self_attn.attn"], SlidingWindowSpec)
    assert specs["model.layers.1.self_attn.attn"].sliding_window == 65
    assert type(specs["model.layers.2.self_attn.attn"]) is FullAttentionSpec
    ts = {t.name: t for t in a.weight_tensors(ctx)}
    # sinks: fp32 [8 / 2] a layer; one fp32 rotary table [1024, 32]
    s = ts["self_attn.softmax_offset"]
    assert (s.rows, s.count, s.dtype) == (4, 3, "float32")
    r = ts["rotary_emb.cos_sin_cache"]
    assert (r.rows, r.cols, r.dtype) == (1024, 32, "float32")
    # layer 0 dense (512 / 2 per rank), layers 1-2 MoE with a gateless shared expert (128 / 2)
    assert ts["mlp.gate_up_proj"].count == 1 and ts["mlp.gate_up_proj"].rows == 512
    assert ts["mlp.shared_expert.gate_up_proj"].rows == 128 and ts["mlp.gate"].count == 2
    assert "mlp.shared_expert_gate" not in ts and "self_attn.o_proj.bias" not in ts
