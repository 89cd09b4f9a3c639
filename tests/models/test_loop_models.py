"""IQuest LoopCoder and Dory (vLLM 0.33.0 iquest_loopcoder.py, dory.py): worked examples by hand."""

from __future__ import annotations

import pytest

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext
from vmemplan.core.kv_specs import FullAttentionSpec, SlidingWindowSpec
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

LOOP = {
    "architectures": ["IQuestLoopCoderForCausalLM"], "model_type": "llama", "torch_dtype": "bfloat16",
    "vocab_size": 1000, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 3,
    "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 1024,
    "loop_num": 3, "loop_window_size": 32, "tie_word_embeddings": False,
}

DORY = {
    "architectures": ["DoryForCausalLM"], "model_type": "dory", "torch_dtype": "bfloat16",
    "vocab_size": 1000, "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 6,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "max_position_embeddings": 1024,
    "sliding_window": 64, "n_input_layers": 2, "n_recurrent_layers": 2, "n_output_layers": 2,
    "n_recurrent_loops": 3, "recurrent_kv_cache_mode": "per_loop",
    "layer_types": ["sliding_attention", "mlp", "full_attention", "mlp", "sliding_attention", "mlp"],
    "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1e4},
                        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}},
}


def test_loopcoder_caches_and_gates_by_hand() -> None:
    a = adapter_for(ModelConfig.from_dict(LOOP))
    specs = a.kv_cache_specs(GraphContext(tensor_parallel_size=2))
    # 3 layers × 3 loops: model.layers.0-2 full, 3-8 with the 32-token window; 1 KV head a rank
    assert sorted(specs, key=lambda n: int(n.split(".")[2])) == [f"model.layers.{i}.self_attn.attn" for i in range(9)]
    assert all(type(specs[f"model.layers.{i}.self_attn.attn"]) is FullAttentionSpec for i in range(3))
    local = specs["model.layers.5.self_attn.attn"]
    assert isinstance(local, SlidingWindowSpec) and local.sliding_window == 32 and local.num_kv_heads == 1
    ts = {t.name: t for t in a.weight_tensors(GraphContext(tensor_parallel_size=2))}
    # gate: [heads / tp, head_dim] = [2, 64] and its bias [2], one a layer
    g = ts["gate_projections.gate_proj"]
    assert (g.rows, g.cols, g.count) == (2, 64, 3) and ts["gate_projections.gate_proj.bias"].rows == 2
    # the two extra loops' Attention scales: 4 × 3 layers × 2
    assert ts["self_attn.attn[loop>0].k/v/q/prob_scale"].count == 24


def test_dory_per_loop_caches_by_hand() -> None:
    a = adapter_for(ModelConfig.from_dict(DORY))
    specs = a.kv_cache_specs(GraphContext())
    # attention layers 0, 2, 4; layer 2 is recurrent (layers 2-3) and gets 3 caches: 2, 8, 14
    assert sorted(specs) == sorted(f"backbone.layers.{i}.mixer.attn" for i in (0, 2, 8, 14, 4))
    assert type(specs["backbone.layers.8.mixer.attn"]) is FullAttentionSpec
    assert isinstance(specs["backbone.layers.4.mixer.attn"], SlidingWindowSpec)
    ts = {t.name: t for t in a.weight_tensors(GraphContext())}
    # scales: 4 per Attention module, 5 modules
    assert ts["mixer.attn.k/v/q/prob_scale"].count == 20
    # identical rope parameters: one shared cos/sin cache
    assert sum("rotary" in n for n in ts) == 1
    # qkv (4 + 2·2)·32 = 256 rows, g_proj 128 rows; logit_scale [vocab] unpadded, head padded to 1024
    assert ts["mixer.qkv_proj"].rows == 256 and ts["mixer.g_proj"].rows == 128
    assert ts["lm_head.logit_scale"].rows == 1000 and ts["lm_head"].rows == 1024
    with pytest.raises(UsageError):
        a.validate_parallel(GraphContext(tensor_parallel_size=2))
