"""Step1 (vmemplan/models/step1.py; vLLM 0.33.0 step1.py::Step1ForCausalLM): worked examples by hand."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for
from vmemplan.models.step1 import Step1

STEP1 = {
    "architectures": ["Step1ForCausalLM"], "model_type": "step1", "torch_dtype": "bfloat16",
    "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 8, "num_attention_groups": 2,
    "num_hidden_layers": 3, "max_seq_len": 4096, "vocab_size": 1000, "rms_norm_eps": 1e-5,
}


def _names(ctx: GraphContext) -> dict:
    adapter = adapter_for(ModelConfig.from_dict(STEP1))
    assert isinstance(adapter, Step1)
    return {t.name: t for t in adapter.weight_tensors(ctx)}


def test_alibi_slopes_fp32_per_rank_heads_and_no_rotary() -> None:
    ts = _names(GraphContext(tensor_parallel_size=2))
    slopes = ts["self_attn.attn.alibi_slopes"]
    # 8 heads / tp 2 = 4 slopes a layer, 3 layers, fp32: 4 * 3 * 4 = 48 B
    assert (slopes.rows, slopes.cols, slopes.count, slopes.dtype) == (4, 1, 3, "float32")
    assert "rotary_emb.cos_sin_cache" not in ts


def test_kv_heads_from_num_attention_groups_and_tied_head() -> None:
    ts = _names(GraphContext(tensor_parallel_size=1))
    # qkv rows: (8 + 2 * 2) heads * 32 head_dim = 384
    assert ts["self_attn.qkv_proj"].rows == 384
    # tie_word_embeddings absent: step1.py reads getattr(config, "tie_word_embeddings", True)
    assert "lm_head" not in ts
