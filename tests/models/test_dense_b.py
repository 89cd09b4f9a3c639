"""dense_b architectures (registry/architectures/dense_b.yaml, vmemplan/models/hyperclovax.py,
openpangu.py, telechat2.py): per-rank tensors worked out by hand on small configs."""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.model_config import ModelConfig
from vmemplan.models import adapter_for

TINY = {
    "vocab_size": 1000, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 128,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}


def _adapter(arch: str, base: dict | None = None, **extra):
    return adapter_for(ModelConfig.from_dict({"architectures": [arch], **(TINY if base is None else base), **extra}))


def _tensors(a, tp: int = 1) -> dict[str, tuple[int, int, int, str | None]]:
    return {t.name: (t.rows, t.cols, t.count, t.dtype) for t in a.weight_tensors(GraphContext(tensor_parallel_size=tp))}


NORMS = "input_layernorm+post_attention_layernorm"


def test_hyperclovax_post_norms_double_the_layer_norms():
    # HyperCLOVAXDecoderLayer: input_layernorm + post_attention_layernorm, plus post_norm1 and
    # post_norm2 under use_post_norm: 4 layers x 4 = 16 RMSNorms of width 256 (else 8)
    assert _tensors(_adapter("HyperCLOVAXForCausalLM", use_post_norm=True))[NORMS] == (256, 1, 16, None)
    assert _tensors(_adapter("HyperCLOVAXForCausalLM", use_post_norm=False))[NORMS] == (256, 1, 8, None)


def test_pangu_embedded_bias_and_sandwich_norm():
    # "bias": true biases qkv_proj and o_proj (OpenPanguDecoderLayer); qkv rows per rank at TP 2:
    # (4 heads + 2 x 2 KV heads) x 64 / 2 = 256; sandwich_norm adds pre/post_mlp_layernorm
    t = _tensors(_adapter("PanguEmbeddedForCausalLM", bias=True, sandwich_norm=True), tp=2)
    assert t["self_attn.qkv_proj.bias"] == (256, 1, 4, None)
    assert t["self_attn.o_proj.bias"] == (256, 1, 4, None)
    assert t[NORMS] == (256, 1, 16, None)
    # qkv_bias overrides the qkv part only
    t = _tensors(_adapter("PanguEmbeddedForCausalLM", bias=True, qkv_bias=False))
    assert "self_attn.qkv_proj.bias" not in t and "self_attn.o_proj.bias" in t
    assert t[NORMS] == (256, 1, 8, None)


def test_telechat2_biases_and_gpt_names():
    # TeleChat2Model: o_proj ("dense") and down_proj keep a bias, qkv_proj and gate_up_proj lose
    # theirs; n_layer / n_head / ffn_hidden_size win over Llama names (attribute_map)
    cfg = {"vocab_size": 1000, "hidden_size": 256, "n_layer": 3, "n_head": 4, "num_key_value_heads": 4,
           "ffn_hidden_size": 768, "intermediate_size": 11008, "tie_word_embeddings": False}
    t = _tensors(_adapter("TeleChat2ForCausalLM", base=cfg), tp=2)
    assert t["self_attn.o_proj.bias"] == (256, 1, 3, None)
    assert t["mlp.down_proj.bias"] == (256, 1, 3, None)
    assert "self_attn.qkv_proj.bias" not in t and "mlp.gate_up_proj.bias" not in t
    assert t["mlp.gate_up_proj"][:3] == (768, 256, 3)  # 2 x 768 / 2 per rank
    assert t["mlp.down_proj"][:3] == (256, 384, 3)


def test_exaone_and_stablelm_declarations():
    # EXAONE 3: num_layers names the layer count; StableLM: LayerNorm (weight + bias), a qkv
    # bias from use_qkv_bias and a quarter-head rotary cache ([128, 64 x 0.25])
    t = _tensors(_adapter("ExaoneForCausalLM", base={k: v for k, v in TINY.items() if k != "num_hidden_layers"},
                          num_layers=5))
    assert t["self_attn.qkv_proj"][2] == 5
    t = _tensors(_adapter("StableLmForCausalLM", use_qkv_bias=True, partial_rotary_factor=0.25))
    assert t[NORMS] == (256, 1, 8, None) and t[NORMS + ".bias"] == (256, 1, 8, None)
    assert "self_attn.qkv_proj.bias" in t and "self_attn.o_proj.bias" not in t
    assert t["rotary_emb.cos_sin_cache"][:2] == (128, 16)


def test_step1_has_no_rotary_cache_and_grouped_kv():
    # StepAttention: ALiBi, no rotary embedding; KV heads from num_attention_groups (1 per rank at TP 2)
    a = _adapter("Step1ForCausalLM", num_attention_groups=2)
    t = _tensors(a, tp=2)
    assert "rotary_emb.cos_sin_cache" not in t
    assert t["self_attn.qkv_proj"][0] == (2 + 2 * 1) * 64
