"""HRM-Text (vLLM 0.33.0 hrm_text.py::HrmTextForCausalLM): a worked example by hand."""

from __future__ import annotations

import pytest

from vmemplan.core.errors import UsageError
from vmemplan.core.graph import GraphContext
from vmemplan.core.kv_specs import FullAttentionSpec
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

HRM = {
    "architectures": ["HrmTextForCausalLM"], "model_type": "hrm_text", "torch_dtype": "bfloat16",
    "vocab_size": 1000, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 12,
    "num_layers_per_stack": 2, "H_cycles": 2, "L_cycles": 2, "num_attention_heads": 4,
    "num_key_value_heads": 4, "head_dim": 64, "max_position_embeddings": 1024, "tie_word_embeddings": False,
}


def test_hrm_text_steps_and_tensors_by_hand() -> None:
    a = adapter_for(ModelConfig.from_dict(HRM))
    ctx = GraphContext(tensor_parallel_size=2)
    specs = a.kv_cache_specs(ctx)
    # L steps h·3 + l = 0, 1, 3, 4; H steps h·3 + 2 = 2, 5; global index step·2 + i
    want = {f"model.L_module.layers.{s * 2 + i}.self_attn.attn" for s in (0, 1, 3, 4) for i in (0, 1)}
    want |= {f"model.H_module.layers.{s * 2 + i}.self_attn.attn" for s in (2, 5) for i in (0, 1)}
    assert set(specs) == want and len(specs) == 12
    spec = specs["model.H_module.layers.11.self_attn.attn"]
    assert type(spec) is FullAttentionSpec and spec.num_kv_heads == 2 and spec.head_size == 64  # MHA, 4 / tp
    ts = {t.name: t for t in a.weight_tensors(ctx)}
    # gqkv: 4 x (4 / 2 heads x 64) = 512 rows, 4 physical layers (2 stacks x 2)
    g = ts["self_attn.gqkv_proj"]
    assert (g.rows, g.cols, g.count) == (512, 256, 4)
    # weightless RMSNorms keep ones(256): 2 a layer x 4 layers + 2 final norms
    assert ts["input_layernorm+post_attention_layernorm+final_norm.ones"].count == 10
    assert ts["self_attn.attn_per_step.k/v/q/prob_scale"].count == 4 * 12
    assert ts["lm_head"].rows == 1024 // 2 and "model.z_L_init" in ts
    with pytest.raises(UsageError):
        a.weight_tensors(GraphContext(pipeline_parallel_size=2))
