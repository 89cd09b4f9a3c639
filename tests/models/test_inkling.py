"""Inkling (vLLM 0.33.0 vllm/models/inkling/nvidia/model.py): a worked example by hand."""

from __future__ import annotations

import pytest

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext
from vmemplan.core.kv_specs import FullAttentionSpec, SlidingWindowSpec
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

TEXT = {
    "architectures": ["InklingForCausalLM"], "model_type": "inkling_model", "dtype": "bfloat16",
    "vocab_size": 1000, "hidden_size": 128, "moe_intermediate_size": 32, "intermediate_size": 256,
    "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
    "d_rel": 8, "rel_extent": 64, "local_layer_ids": [0, 1], "sliding_window_size": 16,
    "swa_num_key_value_heads": 4, "use_sconv": True, "conv_kernel_size": 4, "dense_mlp_idx": 1,
    "n_routed_experts": 6, "n_shared_experts": 1, "num_experts_per_tok": 2, "use_gate_bias": True,
    "use_global_scale": True, "shared_expert_sink": True, "model_max_length": 512,
}


def test_inkling_by_hand() -> None:
    a = adapter_for(ModelConfig.from_dict(TEXT))
    assert a.default_max_model_len() == 512
    ctx = GraphContext(tensor_parallel_size=2)
    specs = a.kv_cache_specs(ctx)
    conv = specs["model.layers.0.conv_state"]
    # K = 4; 4 / 2 KV heads a rank; packed 2·32 + 2·128/4 = 128 wide (a power of two already)
    assert isinstance(conv, SlidingWindowSpec) and (conv.block_size, conv.sliding_window) == (4, 4)
    assert (conv.num_kv_heads, conv.head_size) == (2, 128)
    # global layer 2: 2 KV heads -> packed 2·32 + 2·64 = 192 -> 256, one head a rank
    assert (specs["model.layers.2.conv_state"].head_size, specs["model.layers.2.conv_state"].num_kv_heads) == (256, 1)
    assert specs["model.layers.1.attn"].sliding_window == 16
    assert type(specs["model.layers.2.attn"]) is FullAttentionSpec
    ts = {t.name: t for t in a.weight_tensors(ctx)}
    # qkvr: (4·32 + 2·4·32 + 4·8) / 2 = 208 rows on local layers; (128 + 2·2·32 + 32) / 2 = 144 global
    assert ts["attn.qkvr[swa]"].rows == 208 and ts["attn.qkvr[full]"].rows == 144
    assert ts["attn.rel_logits_proj.proj[swa]"].cols == 16 and ts["attn.rel_logits_proj.proj[full]"].cols == 64
    # embedding replicated (1000 rows, unpadded), head vocab-parallel (1024 / 2)
    assert ts["model.embed_tokens"].rows == 1000 and ts["lm_head"].rows == 512
    # HF spelling: intermediate_size is the dense MLP's, moe_intermediate_size the experts'
    assert ts["mlp.gate_up_proj"].rows == 256 and ts["mlp.experts.w13_weight"].rows == 32
    # gate rows 6 + 1 rounded up to 8; one sink expert: w2 [128, 1·32/2]
    assert ts["mlp.gate"].rows == 8 and ts["mlp.sink_experts.w2_weight"].cols == 16
    with pytest.raises(UsageError):
        a.weight_tensors(GraphContext(tensor_parallel_size=4))  # 4 > the global layer's 2 KV heads
