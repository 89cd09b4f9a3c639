"""Classic decoders (models/classic.py, chatglm.py, commandr.py, registry/architectures/classic.yaml):
tensors and caches computed by hand from vLLM 0.33.0's model files."""

from __future__ import annotations

import json
from pathlib import Path

from vmemplan.core.graph import GraphContext
from vmemplan.core.kv_specs import FullAttentionSpec, SlidingWindowSpec
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.model_config import ModelConfig
from vmemplan.models import adapter_for

CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "oracle" / "configs"


def _adapter(cfg: dict):
    return adapter_for(ModelConfig.from_dict(cfg))


def _file(name: str) -> dict:
    return json.loads((CONFIGS / name).read_text())


def _names(adapter, **ctx) -> dict[str, tuple[int, int, int]]:
    return {t.name: (t.rows, t.cols, t.count) for t in adapter.weight_tensors(GraphContext(**ctx))}


def test_gpt2_parameters_by_hand():
    # wte 50,304 (50,257 padded to 64) x 768 = 38,633,472; wpe 1,024 x 768 = 786,432
    # per layer: c_attn 2,304 x 768 + 2,304; c_proj 768 x 768 + 768; c_fc 3,072 x 768 + 3,072;
    #   c_proj 768 x 3,072 + 768; ln_1, ln_2 2 x (768 + 768) -> 7,087,872 x 12 = 85,054,464
    # ln_f 1,536; lm_head tied to wte (GPT2Config's default): nothing
    a = _adapter(_file("openai-community--gpt2.json"))
    assert a.total_params() == 38_633_472 + 786_432 + 85_054_464 + 1_536
    assert "lm_head" not in _names(a) and "rotary_emb.cos_sin_cache" not in _names(a)


def test_gpt2_second_pipeline_stage_keeps_the_embeddings():
    # gpt2.py builds wte, wpe and ln_f without PPMissingLayer: stage 1 of 2 holds them too
    a = _adapter(_file("openai-community--gpt2.json"))
    last = _names(a, pipeline_parallel_size=2, pipeline_rank=1)
    assert last["model.embed_tokens"] == (50_304, 768, 1)
    assert last["model.embed_positions"] == (1_024, 768, 1)
    assert last["self_attn.qkv_proj"][2] == 6


def test_gptj_rotary_dim_and_head_bias():
    # rotary_dim 64 of head 256: cache [2,048, 64]; lm_head [50,432, 4,096] plus a 50,432 bias
    # at TP 1, halved at TP 2; one LayerNorm (weight + bias) per layer
    a = _adapter(_file("lcw99--gpt-j-6B-8bit.json"))
    t1, t2 = _names(a), _names(a, tensor_parallel_size=2)
    assert t1["rotary_emb.cos_sin_cache"] == (2_048, 64, 1)
    assert t1["lm_head"] == (50_432, 4_096, 1) and t1["lm_head.bias"] == (50_432, 1, 1)
    assert t2["lm_head.bias"] == (25_216, 1, 1)
    assert t1["input_layernorm+post_attention_layernorm"] == (4_096, 1, 28)
    assert t1["mlp.up_proj.bias"] == (16_384, 1, 28) and "self_attn.qkv_proj.bias" not in t1


def test_bloom_embedding_norm_and_4h_mlp():
    # BLOOM: word_embeddings_layernorm, MLP 4 x 64 = 256 whatever the config says, no rotary
    a = _adapter({**_file("bigscience--bloom.synthetic.json"), "n_inner": 100})
    t = _names(a)
    assert t["model.embed_layernorm"] == (64, 1, 1) and t["model.embed_layernorm.bias"] == (64, 1, 1)
    assert t["mlp.up_proj"] == (256, 64, 2)
    assert "rotary_emb.cos_sin_cache" not in t and "lm_head" not in t


def test_falcon_7b_multi_query_replicates_the_kv_head():
    # FalconConfig defaults: multi_query, parallel_attn, one input_layernorm per layer; 71 heads
    # of 64: q 4,544 rows, one KV head of 64 rows each for k and v
    a = _adapter(_file("tiiuae--falcon.synthetic.json"))
    t = _names(a)
    assert t["self_attn.qkv_proj"] == (4_544 + 2 * 64, 4_544, 32)
    assert t["input_layernorm+post_attention_layernorm"] == (4_544, 1, 32)
    assert t["mlp.up_proj"] == (4 * 4_544, 4_544, 32)
    assert t["rotary_emb.cos_sin_cache"] == (2_048, 64, 1)
    spec = a.kv_cache_specs(GraphContext())["model.layers.0.self_attn.attn"]
    assert spec.num_kv_heads == 1 and spec.head_size == 64


def test_falcon_new_decoder_architecture_and_alibi():
    # new_decoder_architecture: num_kv_heads KV heads, ln_attn + ln_mlp; alibi: no rotary cache
    base = {**_file("tiiuae--falcon.synthetic.json"), "hidden_size": 8192, "num_attention_heads": 128,
            "num_hidden_layers": 2, "new_decoder_architecture": True, "num_kv_heads": 8}
    a = _adapter(base)
    t = _names(a, tensor_parallel_size=4)
    assert t["self_attn.qkv_proj"] == ((32 + 2 * 2) * 64, 8_192, 2)
    assert t["input_layernorm+post_attention_layernorm"] == (8_192, 1, 4)
    alibi = _names(_adapter({**base, "alibi": True}))
    assert "rotary_emb.cos_sin_cache" not in alibi


def test_opt_350m_projections_and_post_norm():
    # OPT-350m's shape: word_embed_proj_dim 512 != hidden 1,024 -> embed_tokens [50,304, 512],
    # project_in / project_out; do_layer_norm_before false -> no decoder final_layer_norm;
    # embed_positions 2,048 + 2 rows
    cfg = {**_file("facebook--opt.synthetic.json"), "hidden_size": 1024, "word_embed_proj_dim": 512,
           "do_layer_norm_before": False, "num_attention_heads": 16, "ffn_dim": 4096}
    t = _names(_adapter(cfg))
    assert t["model.embed_tokens"] == (50_304, 512, 1)
    assert t["model.decoder.project_in"] == (1_024, 512, 1) and t["model.decoder.project_out"] == (512, 1_024, 1)
    assert t["model.embed_positions"] == (2_050, 1_024, 1)
    assert "model.norm" not in t and "lm_head" not in t


def test_cohere2_window_layers_get_window_plus_one():
    # Cohere2Config: every 4th layer full attention, the others sliding_window + 1 = 4,097
    # (commandr.py::CohereAttention sets per_layer_sliding_window = sliding_window + 1)
    a = _adapter(_file("CohereForAI--cohere2.synthetic.json"))
    specs = a.kv_cache_specs(GraphContext())
    assert isinstance(specs["model.layers.3.self_attn.attn"], FullAttentionSpec)
    win = specs["model.layers.0.self_attn.attn"]
    assert isinstance(win, SlidingWindowSpec) and win.sliding_window == 4_097
    assert sum(isinstance(s, SlidingWindowSpec) for s in specs.values()) == 30


def test_command_r_rotary_over_model_max_length_and_no_head():
    # model_max_length wins for the rope cache and the derived context; the embedding is the head
    cfg = {**_file("CohereForAI--c4ai-command-r-v01.ome-trimmed.json"), "max_position_embeddings": 8192,
           "model_max_length": 131072}
    a = _adapter(cfg)
    t = _names(a)
    assert t["rotary_emb.cos_sin_cache"] == (131_072, 128, 1)
    assert a.derived_max_model_len() == 131_072
    assert "lm_head" not in t and t["input_layernorm+post_attention_layernorm"] == (8_192, 1, 40)


def test_chatglm3_half_rotary_and_qkv_bias():
    # chatglm3-6b: head 128, rotary over half of it on seq_length 8,192 positions; 2 KV groups;
    # query_key_value bias (add_qkv_bias) of 4,096 + 2 x 2 x 128 = 4,608 rows
    a = _adapter(_file("THUDM--chatglm3-6b.json"))
    t = _names(a)
    assert t["rotary_emb.cos_sin_cache"] == (8_192, 64, 1)
    assert t["self_attn.qkv_proj.bias"] == (4_608, 1, 28)
    assert t["lm_head"] == (65_024, 4_096, 1)
    wb = weight_bytes_per_rank(a.weight_tensors(GraphContext()), model_dtype="float16")
    assert wb.by_kind["buffer"] == 8_192 * 64 * 2 + 28 * 16


def test_gemma_normalizer_and_tied_head():
    a = _adapter(_file("google--gemma-7b.json"))
    t = _names(a)
    assert t["model.normalizer"] == (1, 1, 1) and "lm_head" not in t


def test_bloom_alibi_slopes_and_context_without_length_keys():
    # the attention backend keeps each layer's slopes as fp32 [heads / tp]: 2 layers x 4 x 4 B at
    # TP 2 (an oracle run with the slopes computed on the CPU measured the same 64 B at TP 1);
    # BloomConfig has no length key: any --max-model-len is taken, the default is 2,048
    a = _adapter(_file("bigscience--bloom.synthetic.json"))
    assert _names(a, tensor_parallel_size=2)["self_attn.attn.alibi_slopes"] == (4, 1, 2)
    assert a.default_max_model_len() == 2_048 and a.derived_max_model_len() > 1_000_000
