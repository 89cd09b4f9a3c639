"""openPangu MoE (MLA and sink attention), Sarvam-MLA, LongCat-Flash n-gram and K2 Horizon MoVA:
worked examples by hand.

vLLM 0.33.0: openpangu.py (OpenPanguMLAAttention, OpenPanguSinkAttention, OpenPanguMoE),
static_sink_attention.py::StaticSinkAttention.get_kv_cache_spec, sarvam.py::SarvamMLABlock,
longcat_flash_ngram.py::NgramEmbedding, k2_horizon.py::K2HorizonMoVAAttention.
"""

from __future__ import annotations

from vmemplan.core.graph import GraphContext
from vmemplan.core.kv_specs import FullAttentionSpec, MLAAttentionSpec
from vmemplan.model_config import ModelConfig
from vmemplan.models.base import adapter_for

BASE = {
    "torch_dtype": "bfloat16", "vocab_size": 1000, "hidden_size": 256, "intermediate_size": 512,
    "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 4, "max_position_embeddings": 1024,
    "moe_intermediate_size": 64, "first_k_dense_replace": 1, "tie_word_embeddings": False,
}
MLA = {"kv_lora_rank": 32, "q_lora_rank": 48, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 24}


def _adapter(arch: str, **changes):
    return adapter_for(ModelConfig.from_dict({**BASE, "model_type": "llama", "architectures": [arch], **changes}))


def _tensors(arch: str, tp: int = 1, **changes) -> tuple[dict, object]:
    a = _adapter(arch, **changes)
    return {t.name: t for t in a.weight_tensors(GraphContext(tensor_parallel_size=tp))}, a


def test_pangu_ultra_mla_rope_bias_and_sandwich_norms() -> None:
    ts, a = _tensors("PanguUltraMoEForCausalLM", **MLA, n_routed_experts=8, n_shared_experts=1,
                     router_enable_expert_bias=True, sandwich_norm=True,
                     rope_scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 256})
    # DeepSeek YaRN of factor 1 whatever the config says: [1024, 8]
    rope = ts["rotary_emb.cos_sin_cache"]
    assert (rope.rows, rope.cols) == (1024, 8)
    assert ts["mlp.gate.e_score_correction_bias"].count == 3 and ts["mlp.gate"].count == 3  # layers 1..3
    assert ts["pre_mlp_layernorm+post_mlp_layernorm"].count == 2 * 4
    spec = next(iter(a.kv_cache_specs(GraphContext(block_size=16)).values()))
    assert isinstance(spec, MLAAttentionSpec) and spec.head_size == 32 + 8


def test_pangu_pro_v2_sink_attention_tensors_and_cache() -> None:
    sink = {"qk_nope_dim": 16, "qk_rope_dim": 8, "v_channels": 12, "param_sink_number": 32,
            "param_sink_with_value": True, "num_key_value_heads": 2, "n_routed_experts": 8, "n_shared_experts": 1}
    ts, a = _tensors("PanguProMoEV2ForCausalLM", tp=2, **sink)
    # one rank: 2 query heads and 1 KV head; keys of 24, values of 12
    assert ts["self_attn.qkv_proj"].rows == 2 * 24 + 1 * 24 + 1 * 12
    assert ts["self_attn.o_proj"].cols == 2 * 12
    assert (ts["self_attn.param_sink_key"].rows, ts["self_attn.param_sink_key"].cols) == (32, 24)
    assert (ts["self_attn.param_sink_value"].rows, ts["self_attn.param_sink_value"].cols) == (32, 12)
    assert ts["self_attn.attn.sink_key"].elements == 4 * 32 * 24  # the normed key copy, every layer
    assert (ts["rotary_emb.cos_sin_cache"].rows, ts["rotary_emb.cos_sin_cache"].cols) == (1024, 8)
    spec = next(iter(a.kv_cache_specs(GraphContext(tensor_parallel_size=2, block_size=16)).values()))
    assert isinstance(spec, FullAttentionSpec)
    # one block: 16 tokens x 1 head x (24 + 12) x 2 bytes
    assert (spec.head_size, spec.head_size_v, spec.num_kv_heads) == (24, 12, 1)
    assert spec.page_size_bytes == 16 * 36 * 2


def test_sarvam_layers_and_router_bias_default() -> None:
    ts, _ = _tensors("SarvamMLAForCausalLM", **MLA, num_experts=8, num_shared_experts=2, moe_layer_freq=2)
    # MoE at index >= 1 with (index - 1) % 2 == 0: layers 1 and 3
    assert ts["mlp.gate"].count == 2 and ts["mlp.gate_up_proj"].count == 2
    assert ts["mlp.gate.e_score_correction_bias"].dtype == "float32"  # on by default
    assert ts["mlp.shared_experts.gate_up_proj"].rows == 2 * 2 * 64


def test_longcat_ngram_tables() -> None:
    lc = {"num_layers": 2, "ffn_hidden_size": 512, "expert_ffn_hidden_size": 64, "n_routed_experts": 8,
          "zero_expert_num": 4, "ngram_vocab_size_ratio": 2, "emb_neighbor_num": 3, "emb_split_num": 2, **MLA}
    ts, _ = _tensors("LongcatFlashNgramForCausalLM", tp=2, **lc)
    # 2 x (3 - 1) = 4 embedders of 256 / 4 = 64 columns; rows 2001 + 2003 + 2005 + 2007 = 8016,
    # padded to 8064, half a rank
    oe = ts["ngram_embeddings.oe_embedder"]
    assert (oe.rows, oe.cols) == (4032, 64)
    assert ts["ngram_embeddings.oe_projection"].elements == 4 * 64 * 256
    assert ts["ngram_embeddings.ne_weights"].elements == 2 * 2 * 3
    assert ts["ngram_embeddings.exclusive_sizes"].elements == 5


def test_k2_horizon_mova_layers() -> None:
    k2 = {"head_dim": 64, "num_key_value_heads": 2, "num_experts": 8, "num_experts_per_tok": 2,
          "num_shared_experts": 1, "mova_num_experts": 3, "mova_num_experts_per_tok": 2, "mlp_only_layers": [0],
          "decoder_sparse_step": 1, "moe_gate_bias": True, "query_key_norm": True, "attention_gate_func": "softplus",
          "rope_head_dim": 32, "rope_parameters": {"rope_theta": 1e6, "rope_type": "default"}}
    ts, _ = _tensors("K2HorizonForCausalLM", tp=2, **k2)
    # layer 0 ordinary attention; layers 1..3 MoVA: qk_proj of 2 x 64 + 1 x 64 a rank, 3 value experts
    assert ts["self_attn.qkv_proj"].count == 1 and ts["self_attn.qkv_proj"].rows == 128 + 2 * 64
    assert ts["self_attn.qk_proj"].rows == 128 + 64 and ts["self_attn.qk_proj"].count == 3
    assert ts["self_attn.v_experts"].count == 3 * 3 and ts["self_attn.v_experts"].rows == 64
    assert ts["self_attn.v_router.bias"].dtype == "float32"
    assert ts["self_attn.q_norm"].rows == 128 and ts["self_attn.k_norm"].rows == 64
    assert ts["mlp.gate"].count == 3 and ts["mlp.gate_up_proj"].count == 1
    assert (ts["rotary_emb.cos_sin_cache"].rows, ts["rotary_emb.cos_sin_cache"].cols) == (1024, 32)
