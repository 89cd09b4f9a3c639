"""Dense adapters: parameter counts and per-rank weights computed by hand."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vmemplan.core.errors import ModelConfigError, UnsupportedArchitecture, UsageError
from vmemplan.laws.weights import weight_bytes_per_rank
from vmemplan.model_config import ModelConfig
from vmemplan.models import adapter_for
from vmemplan.core.graph import GraphContext
from vmemplan.models.dense import pad_vocab, pp_layer_range


def _adapter(cfg: dict):
    return adapter_for(ModelConfig.from_dict(cfg))


def test_llama_31_8b_parameters_by_hand(config_dict):
    # embed 128,256 × 4,096 = 525,336,576, untied so twice: 1,050,673,152
    # per layer: q 4096² = 16,777,216; k, v 4096 × 1024 = 4,194,304 each; o 16,777,216
    #   → 41,943,040; MLP 3 × 4096 × 14336 = 176,160,768; norms 2 × 4096 = 8,192
    #   → 218,112,000 × 32 layers = 6,979,584,000; final norm 4,096
    expected = 1_050_673_152 + 6_979_584_000 + 4_096
    assert expected == 8_030_261_248  # seed 000, and SOURCES.md's index total
    a = _adapter(config_dict("meta-llama--Llama-3.1-8B.json"))
    assert a.total_params() == expected


def test_llama_31_8b_weights_bytes_match_log(config_dict):
    # 8,030,261,248 × 2 B = 16,060,522,496 plus the rotary cos/sin cache vLLM builds once:
    # 131,072 positions × 128 dims × 2 B = 33,554,432 → 16,094,076,928 B = 14.98878 GiB,
    # printed "Model loading took 14.9888 GiB" in corpus log 040 (vLLM 0.11.0); plus each
    # attention layer's four fp32 scales (attention.py::set_default_quant_scales): 32 × 16 B.
    a = _adapter(config_dict("meta-llama--Llama-3.1-8B.json"))
    wb = weight_bytes_per_rank(a.weight_tensors(GraphContext()), model_dtype="bfloat16")
    assert wb.total_bytes == 16_060_522_496 + 33_554_432 + 32 * 16
    assert round(wb.total_bytes / 2**30, 4) == 14.9888


def test_tp2_halves_sharded_parts(config_dict):
    # At tp 2: linears halve; 8 KV heads → 4 per rank; norms and the rope cache replicate.
    a = _adapter(config_dict("meta-llama--Llama-3.1-8B.json"))
    w1 = weight_bytes_per_rank(a.weight_tensors(GraphContext()), model_dtype="bfloat16").by_kind
    w2 = weight_bytes_per_rank(a.weight_tensors(GraphContext(tensor_parallel_size=2)), model_dtype="bfloat16").by_kind
    assert w2["linear"] * 2 == w1["linear"]
    assert w2["embedding"] * 2 == w1["embedding"]
    assert w2["norm"] == w1["norm"] and w2["buffer"] == w1["buffer"]


def test_kv_heads_replicate_beyond_tp(config_dict):
    # Llama-3.1-70B has 8 KV heads: at tp 16 each rank keeps one whole head.
    a = _adapter(config_dict("meta-llama--Llama-3.1-70B.json"))
    assert a.kv_heads_per_rank(16) == 1 and a.kv_heads_per_rank(4) == 2


def test_qwen2_has_qkv_bias_only(config_dict):
    a = _adapter(config_dict("Qwen--Qwen2.5-7B.json"))
    # SOURCES.md: Qwen2.5-7B has 7,615,616,512 parameters (q/k/v biases included).
    assert a.total_params() == 7_615_616_512
    kinds = {t.name for t in a.weight_tensors(GraphContext()) if t.kind == "bias"}
    assert kinds == {"self_attn.qkv_proj.bias"}


def test_qwen3_qk_norm(config_dict):
    assert _adapter(config_dict("Qwen--Qwen3-8B.json")).total_params() == 8_190_735_360
    assert _adapter(config_dict("Qwen--Qwen3-32B.json")).total_params() == 32_762_123_264


def test_vocab_padding():
    # vllm pads the vocabulary to a multiple of 64 before splitting it over tp.
    assert pad_vocab(32_000) == 32_000
    assert pad_vocab(32_064) == 32_064
    assert pad_vocab(151_655) == 151_680
    assert pad_vocab(1) == 64


@pytest.mark.parametrize(("layers", "pp", "parts"), [
    (32, 2, [16, 16]),
    (33, 2, [17, 16]),   # the remainder goes to the second-to-last stage
    (62, 4, [15, 16, 16, 15]),  # 62 = 4 × 15 + 2: stages -2 and -3 get one more
    (64, 3, [21, 22, 21]),
])
def test_pp_layer_split(layers, pp, parts):
    got = [pp_layer_range(layers, pp, r) for r in range(pp)]
    assert [e - s for s, e in got] == parts
    assert got[0][0] == 0 and got[-1][1] == layers


@given(tp=st.sampled_from([1, 2, 4, 8]))
def test_tp_never_raises_weights(tp):
    import json
    from pathlib import Path

    cfg = json.loads((Path(__file__).parents[2] / "registry/models/meta-llama--Llama-3.1-8B.json").read_text())
    a = _adapter(cfg)
    w1 = weight_bytes_per_rank(a.weight_tensors(GraphContext()), model_dtype="bfloat16").total_bytes
    wt = weight_bytes_per_rank(a.weight_tensors(GraphContext(tensor_parallel_size=tp)), model_dtype="bfloat16").total_bytes
    assert wt <= w1
    assert wt * tp >= w1  # replicated norms/buffers only add


def test_bad_tp_is_usage_error(config_dict):
    a = _adapter(config_dict("meta-llama--Llama-3.1-8B.json"))
    with pytest.raises(UsageError):
        a.validate_parallel(GraphContext(tensor_parallel_size=3))


@pytest.mark.parametrize("cfg", [
    [], {"architectures": "Llama"}, {"hidden_size": 4096}, {"hidden_size": "big", "num_hidden_layers": 2},
    {"hidden_size": 10, "num_hidden_layers": 2, "num_attention_heads": 3, "vocab_size": 10},
    {"hidden_size": -1, "num_hidden_layers": 2, "num_attention_heads": 1, "vocab_size": 10},
])
def test_bad_configs_are_model_config_errors(cfg):
    with pytest.raises(ModelConfigError):
        ModelConfig.from_dict(cfg)


def test_unknown_architecture_names_families():
    cfg = {"architectures": ["FooMoEForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
           "num_attention_heads": 4, "vocab_size": 100, "num_experts": 8}
    with pytest.raises(UnsupportedArchitecture) as e:
        adapter_for(ModelConfig.from_dict(cfg))
    # experts and no MLA: the Qwen3-MoE family, offered as --assume-family
    assert "resembles Qwen3MoeForCausalLM" in e.value.message
    assert "--assume-family Qwen3MoeForCausalLM" in (e.value.hint or "")


def test_generic_fallback_is_flagged():
    cfg = {"architectures": ["FooForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
           "num_attention_heads": 4, "vocab_size": 100, "intermediate_size": 128}
    a = adapter_for(ModelConfig.from_dict(cfg))
    assert a.fidelity == "generic" and "not a known architecture" in a.notes()[0]
