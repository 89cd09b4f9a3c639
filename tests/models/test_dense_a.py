"""dense_a architectures (registry/architectures/dense_a.yaml, vmemplan/models/dense_a_variants.py):
per-rank tensors worked out by hand on small configs."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.core.kv_specs import FullAttentionSpec, SlidingWindowSpec
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.model_config import ModelConfig
from vmemplan.models import adapter_for

TINY = {
    "vocab_size": 1000, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 128,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}


def _adapter(arch: str, **extra):
    return adapter_for(ModelConfig.from_dict({"architectures": [arch], **TINY, **extra}))


def _tensors(a, tp: int = 1) -> dict[str, tuple[int, int, int, str | None]]:
    return {t.name: (t.rows, t.cols, t.count, t.dtype) for t in a.weight_tensors(GraphContext(tensor_parallel_size=tp))}


def test_glm4_defaults_rotary_to_half_the_head():
    # no partial_rotary_factor anywhere: Glm4Attention sets 0.5, so the cos/sin cache is
    # [128 positions, 64 * 0.5 = 32]; four RMSNorms per layer: 4 layers × 4 = 16 of width 256
    t = _tensors(_adapter("Glm4ForCausalLM", attention_bias=True))
    assert t["rotary_emb.cos_sin_cache"][:2] == (128, 32)
    assert t["input_layernorm+post_attention_layernorm"] == (256, 1, 16, None)
    assert "self_attn.qkv_proj.bias" in t and "self_attn.o_proj.bias" not in t
    assert "mlp.down_proj.bias" not in t
    # a stated fraction wins
    t = _tensors(_adapter("Glm4ForCausalLM", partial_rotary_factor=0.25))
    assert t["rotary_emb.cos_sin_cache"][:2] == (128, 16)


def test_apertus_holds_xielu_scalars_in_bfloat16():
    a = _adapter("ApertusForCausalLM", hidden_act="xielu")
    t = _tensors(a)
    assert t["mlp.act_fn.alpha_p/alpha_n/beta/eps"] == (1, 1, 16, "bfloat16")  # 4 per layer
    assert t["mlp.up_proj"][:2] == (512, 256) and "mlp.gate_up_proj" not in t
    assert t["self_attn.q_norm+k_norm"] == (64, 1, 8, None)
    # in a float16 model they stay bfloat16: 16 × 2 B
    wb = weight_bytes_per_rank(a.weight_tensors(GraphContext()), model_dtype="float16")
    wb32 = weight_bytes_per_rank(a.weight_tensors(GraphContext()), model_dtype="float32")
    # every other tensor doubles from 2 to 4 bytes, the xIELU scalars do not
    attn_scales = 4 * 4 * 4  # fp32 in both
    assert wb32.total_bytes - attn_scales - 32 == 2 * (wb.total_bytes - attn_scales - 32)


def test_granite_swa_sinks_windows_and_rope_bases():
    a = _adapter("GraniteSWAForCausalLM", sliding_window=32,
                 layer_types=["full_attention", "sliding_attention", "sliding_attention", "sliding_attention"],
                 layer_rope_theta=[0, 10000.0, 10000.0, 500000.0])
    t = _tensors(a, tp=2)
    assert t["self_attn.sinks"] == (2, 1, 4, None)  # 4 heads / tp 2, one per layer
    assert t["rotary_emb.cos_sin_cache"][2] == 2  # bases 10000 and 500000; 0 is NoPE
    specs = a.kv_cache_specs(GraphContext())
    assert type(specs["model.layers.0.self_attn.attn"]) is FullAttentionSpec
    assert specs["model.layers.1.self_attn.attn"].sliding_window == 32
    assert isinstance(specs["model.layers.3.self_attn.attn"], SlidingWindowSpec)
    # attention_sinks: false drops them
    assert "self_attn.sinks" not in _tensors(_adapter("GraniteSWAForCausalLM", layer_types=["full_attention"] * 4,
                                                      attention_sinks=False))


def test_minicpm_moe_shards_every_expert():
    # 8 experts of intermediate 512 at tp 2: ws [8, 512, 256] and w2s [8, 256, 256] per layer
    t = _tensors(_adapter("MiniCPMForCausalLM", num_experts=8, num_experts_per_tok=2), tp=2)
    assert t["mlp.ws"] == (512, 256, 32, None) and t["mlp.w2s"] == (256, 256, 32, None)
    assert t["mlp.gate"] == (8, 256, 4, None)
    assert "mlp.gate_up_proj" not in t
    dense = _tensors(_adapter("MiniCPMForCausalLM"))
    assert dense["mlp.gate_up_proj"][:2] == (1024, 256) and "mlp.ws" not in dense
