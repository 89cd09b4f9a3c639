"""MLA families on MlaDecoder (vmemplan/models/mla_common.py) and MiniCPM3: worked examples by hand.

vLLM 0.33.0: mla_attention.py::MLAAttention.process_weights_after_loading keeps W_UK_T and
W_UV beside kv_b_proj; longcat_flash.py::FlashDecoderLayer has two MLA attentions a layer;
minicpm3.py::MiniCPM3Attention caches heads/tp full heads of qk_nope + qk_rope.
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.core.kv_specs import FullAttentionSpec, MLAAttentionSpec
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

MLA = {
    "model_type": "glm4_moe_lite", "torch_dtype": "bfloat16", "vocab_size": 1000, "hidden_size": 256,
    "intermediate_size": 512, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 4,
    "max_position_embeddings": 1024, "n_routed_experts": 8, "n_shared_experts": 1, "num_experts_per_tok": 2,
    "moe_intermediate_size": 64, "first_k_dense_replace": 1, "kv_lora_rank": 32, "q_lora_rank": 48,
    "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 24, "tie_word_embeddings": False,
}


def _tensors(arch: str, tp: int = 1, **changes) -> dict:
    a = adapter_for(ModelConfig.from_dict({**MLA, "architectures": [arch], **changes}))
    return {t.name: t for t in a.weight_tensors(GraphContext(tensor_parallel_size=tp))}, a


def test_glm4_moe_lite_decode_copies_router_and_rope() -> None:
    ts, _ = _tensors("Glm4MoeLiteForCausalLM", tp=2)
    # 2 heads a rank: W_UK_T [2, 16, 32] and W_UV [2, 32, 24], one each of 3 layers
    assert (ts["self_attn.mla_attn.W_UK_T"].elements, ts["self_attn.mla_attn.W_UV"].elements) == (3 * 1024, 3 * 1536)
    # together as many elements as kv_b_proj: 2 x (16 + 24) x 32 = 2,560 a layer
    assert ts["self_attn.kv_b_proj"].elements == 3 * 2560 == ts["self_attn.mla_attn.W_UK_T"].elements + \
        ts["self_attn.mla_attn.W_UV"].elements
    assert ts["self_attn.mla_attn.k/v/q/prob_scale"].count == 4 * 3
    # fp32 router and bias on the 2 MoE layers
    assert ts["mlp.gate"].dtype == ts["mlp.gate.e_score_correction_bias"].dtype == "float32"
    assert ts["mlp.gate"].count == 2
    # default rope: [1024, 8] in the model dtype
    rope = ts["rotary_emb.cos_sin_cache"]
    assert (rope.rows, rope.cols, rope.dtype) == (1024, 8, None)


def test_axk1_adds_a_post_mlp_norm_and_a_default_bias() -> None:
    ts, _ = _tensors("AXK1ForCausalLM")
    assert ts["post_mlp_layernorm"].count == 3
    assert ts["mlp.gate.e_score_correction_bias"].count == 2  # topk_method absent: noaux_tc


def test_longcat_flash_has_two_latent_caches_a_layer() -> None:
    cfg = {**MLA, "architectures": ["LongcatFlashForCausalLM"], "num_layers": 2, "ffn_hidden_size": 512,
           "expert_ffn_hidden_size": 64, "zero_expert_num": 4, "zero_expert_type": "identity"}
    cfg.pop("num_hidden_layers")
    a = adapter_for(ModelConfig.from_dict(cfg))
    ctx = GraphContext()
    ts = {t.name: t for t in a.weight_tensors(ctx)}
    assert ts["self_attn.kv_b_proj"].count == 4  # 2 layers x 2 attentions
    assert ts["mlps.gate_up_proj"].count == 4
    assert (ts["mlp.router.classifier"].rows, ts["mlp.router.classifier"].dtype) == (8 + 4, "float32")
    specs = a.kv_cache_specs(ctx)
    assert len(specs) == 4
    spec = next(iter(specs.values()))
    # one latent head of kv_lora_rank + qk_rope = 40 elements x 2 B, 16 tokens a block
    assert isinstance(spec, MLAAttentionSpec) and spec.head_size == 40


def test_minicpm3_caches_full_heads() -> None:
    cfg = {**MLA, "architectures": ["MiniCPM3ForCausalLM"], "model_type": "minicpm3"}
    for key in ("n_routed_experts", "n_shared_experts", "moe_intermediate_size", "first_k_dense_replace",
                "tie_word_embeddings"):
        cfg.pop(key)
    a = adapter_for(ModelConfig.from_dict(cfg))
    specs = a.kv_cache_specs(GraphContext(tensor_parallel_size=2))
    spec = specs["model.layers.0.self_attn.attn"]
    # 4 heads / TP 2 = 2 KV heads of 16 + 8 = 24 (V padded to it)
    assert isinstance(spec, FullAttentionSpec) and (spec.num_kv_heads, spec.head_size) == (2, 24)
    ts = {t.name: t for t in a.weight_tensors(GraphContext(tensor_parallel_size=2))}
    assert "lm_head" not in ts  # tied unless the config says otherwise
    assert ts["self_attn.q_b_proj"].rows == 2 * 24 and ts["self_attn.o_proj"].cols == 2 * 24
