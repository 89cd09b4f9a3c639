"""Gemma-3n (vllm/model_executor/models/gemma3n.py, 0.33.0): worked examples by hand."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.core.kv_specs import FullAttentionSpec, SlidingWindowSpec
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

# 6 layers, the last 3 KV-shared; window on all but every 3rd layer
TINY = {
    "architectures": ["Gemma3nForCausalLM"], "model_type": "gemma3n_text", "torch_dtype": "bfloat16",
    "vocab_size": 1000, "vocab_size_per_layer_input": 500, "hidden_size": 128,
    "intermediate_size": [512, 512, 256, 256, 256, 256], "num_hidden_layers": 6,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "max_position_embeddings": 1024,
    "num_kv_shared_layers": 3, "altup_num_inputs": 4, "laurel_rank": 16, "hidden_size_per_layer_input": 8,
    "sliding_window": 64, "hidden_activation": "gelu_pytorch_tanh",
    "layer_types": ["sliding_attention", "sliding_attention", "full_attention",
                    "sliding_attention", "sliding_attention", "full_attention"],
    "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}},
}


def _adapter():
    return adapter_for(ModelConfig.from_dict(TINY))


def test_kv_sharing_by_hand() -> None:
    a = _adapter()
    # first shared layer 3: window layers read layer 3 - 2 = 1, global layers layer 3 - 1 = 2
    assert [a.kv_sharing_target(i) for i in range(6)] == [None, None, None, 1, 1, 2]
    specs = a.kv_cache_specs(GraphContext())
    assert sorted(specs) == [f"model.layers.{i}.self_attn.attn" for i in range(3)]
    assert isinstance(specs["model.layers.0.self_attn.attn"], SlidingWindowSpec)
    assert type(specs["model.layers.2.self_attn.attn"]) is FullAttentionSpec


def test_tensors_by_hand() -> None:
    a = _adapter()
    ts: dict[str, list] = {}
    for t in a.weight_tensors(GraphContext(tensor_parallel_size=2)):
        ts.setdefault(t.name, []).append(t)
    # 3 owning layers: qkv (2 + 2·1)·32 = 128 rows at TP 2; 3 shared layers: q_proj 2·32 = 64 rows
    assert [(t.rows, t.count) for t in ts["self_attn.qkv_proj"]] == [(128, 3)]
    assert [(t.rows, t.count) for t in ts["self_attn[kv-shared].q_proj"]] == [(64, 3)]
    # q_norm on 6 layers, k_norm and v_norm's ones tensor on the 3 owning layers
    assert ts["self_attn.q_norm+k_norm+v_norm"][0].count == 12
    # per-layer FFN widths: two layers of 512, four of 256, split by TP
    assert sorted((t.rows, t.count) for t in ts["mlp[512].gate_up_proj"] + ts["mlp[256].gate_up_proj"]) == \
        [(256, 4), (512, 2)]
    # AltUp: prediction_coefs [16, 4] replicated; laurel left 16 / 2 rows
    assert (ts["altup.prediction_coefs"][0].rows, ts["altup.prediction_coefs"][0].cols) == (16, 4)
    assert ts["laurel.linear_left"][0].rows == 8
    # per-layer embedding: 500 padded to 512 rows / 2, 6 · 8 = 48 columns
    ple = ts["model.embed_tokens_per_layer"][0]
    assert (ple.rows, ple.cols) == (256, 48)
    # the embedding is the LM head: no lm_head tensor
    assert "lm_head" not in ts
    # two rotary caches [1024, 32]
    assert sorted(t.name for t in a.weight_tensors(GraphContext()) if "rotary" in t.name) == [
        "rotary_emb(full_attention).cos_sin_cache", "rotary_emb(sliding_attention).cos_sin_cache"]
